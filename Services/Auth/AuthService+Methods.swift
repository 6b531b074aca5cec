import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    /// The service definition's `register`: builds the service and registers its methods.
    static func registerMethods(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        try await make(resources: resources).registerMethods(on: &router)
    }

    /// Registers every `auth.*` method, with the descriptions `rpc.discover` shows client authors.
    func registerMethods(on router: inout RPCRouter) {
        router.register(SessionAPI.register, handler: register)
        router.register(SessionAPI.login, handler: login)
        // Offered only where the operator configured Google sign-in: elsewhere the method is not found
        // (-32601), which a client takes as "not offered here" rather than as an outage to retry.
        if let google {
            router.register(
                "auth.loginWithGoogle",
                summary: """
                    Signs in with a Google OpenID Connect ID token (idToken). The first sign-in creates an account \
                    (created: true) or links the account with the same email. Google must have verified the email; \
                    registering did not, so linking an account registered with a password removes that password and \
                    ends its sessions (whoever registered someone else's address loses the account to its owner).
                    """,
                access: .anonymous
            ) { params, context in try await loginWithGoogle(params, verifier: google, context: context) }
        }
        router.register(SessionAPI.refresh, handler: refresh)
        router.register(
            "auth.logout",
            summary: "Ends the caller's session at once: its access and refresh tokens stop working on every service.",
            access: .user, handler: logout)
        router.register(
            "auth.me", summary: "The caller's own profile, with their email.", access: .user, handler: me)
        router.register(
            "auth.getUser",
            summary: """
                One user's profile, by userId or by username (give one). Counts and relations (isFollowed, followsYou) \
                are relative to the caller; anonymous callers see them false.
                """,
            access: .anonymous, handler: getUser)
        router.register(
            "auth.updateProfile",
            summary: """
                Changes the caller's fullname (1-50 characters), bio (at most 160), username (unique, 3-15 of a-z, 0-9 \
                and _) or profile image (profileImageId: a finished upload of the caller's with purpose avatar, checked \
                with the media service: anything else is a validation error, media unreachable is unavailable); omitted \
                fields stay. Returns the updated profile.
                """,
            access: .user, handler: updateProfile)
        router.register(
            "auth.changePassword",
            summary: """
                Replaces the caller's password (currentPassword, newPassword of 8-128 characters) and ends every other \
                session of the account; the calling session stays signed in.
                """,
            access: .user, handler: changePassword)
        router.register(
            "auth.searchUsers",
            summary: """
                Finds users by username or full name: prefixes, and names typed with a typo. Accounts the caller \
                follows come first, then the best matches. query: 1-50 characters (a leading @ is ignored); paged \
                with limit and cursor.
                """,
            access: .anonymous, handler: searchUsers)
        router.register(AuthAPI.getUsers, handler: getUsers)
        router.register(AuthAPI.getProfiles, handler: getProfiles)
    }
}

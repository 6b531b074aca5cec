import AuthTokens
import AviaryAPI
import JWTKit
import Logging
import RPC
import ServiceKit

extension AuthService {
    func loginWithGoogle(
        _ params: LoginWithGoogleParams, verifier: GoogleIDTokenVerifier, context: RPCContext
    ) async throws -> AuthResult {
        try await limits.checkLogin(address: context.clientAddress)
        let claims = try await verifier.verify(params.idToken)
        guard let email = try? AccountRules.email(claims.email ?? "") else {
            throw RPCError.forbidden("the Google account's email address cannot be used for an Aviary account")
        }
        let localPart = String(email.prefix { $0 != "@" })
        let name = String((claims.name ?? "").trimmingWhitespace().unicodeScalars.filter { $0.value != 0 }.prefix(50))
        let identity = IdentityStore.ExternalIdentity(
            provider: "google", subject: claims.subject.value, email: email,
            fullname: name.isEmpty ? String(localPart.unicodeScalars.prefix(50)) : name, usernameSeed: localPart)
        let ids = resources.ids
        let (user, created) = try await identities.signIn(
            identity, newUserID: { ids.next() }, announce: resources.sessionRevocations.revoke(sessionIDs:))
        if created {
            context.logger.info("created an account at its first Google sign-in", metadata: ["user.id": "\(user.id)"])
        }
        return try await startSession(user, created: created, context: context)
    }
}

import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    /// The service definition's `register`: builds the service and registers its methods.
    static func registerMethods(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        try await make(resources: resources).registerMethods(on: &router)
    }

    /// Registers every `auth.*` and `moderation.*` method, with the descriptions `rpc.discover` shows client authors.
    func registerMethods(on router: inout RPCRouter) {
        router.register(SessionAPI.register, handler: register)
        router.register(SessionAPI.login, handler: login)
        // Offered only where the operator configured Google sign-in: elsewhere the method is not found
        // (-32601), which a client takes as "not offered here" rather than as an outage to retry.
        if let google {
            router.register(AccountAPI.loginWithGoogle) { params, context in
                try await loginWithGoogle(params, verifier: google, context: context)
            }
        }
        router.register(SessionAPI.refresh, handler: refresh)
        router.register(AccountAPI.logout, handler: logout)
        router.register(AccountAPI.me, handler: me)
        router.register(AccountAPI.getUser, handler: getUser)
        router.register(AccountAPI.updateProfile, handler: updateProfile)
        router.register(AccountAPI.changePassword, handler: changePassword)
        router.register(AccountAPI.deleteAccount, handler: deleteAccount)
        router.register(ExportAPI.requestExport, handler: requestExport)
        router.register(ExportAPI.exports, handler: exportList)
        router.register(EmailAPI.requestEmailVerification, handler: requestEmailVerification)
        router.register(EmailAPI.verifyEmail, handler: verifyEmail)
        router.register(EmailAPI.requestPasswordReset, handler: requestPasswordReset)
        router.register(EmailAPI.resetPassword, handler: resetPassword)
        router.register(AccountAPI.searchUsers, handler: searchUsers)
        router.register(AuthAPI.getUsers, handler: getUsers)
        router.register(AuthAPI.getProfiles, handler: getProfiles)
        router.register(ModerationAPI.report, handler: report)
        router.register(ModerationAPI.reports, handler: reports)
        router.register(ModerationAPI.resolve, handler: resolve)
        router.register(ModerationAPI.suspend, handler: suspend)
        router.register(ModerationAPI.unsuspend, handler: unsuspend)
    }
}

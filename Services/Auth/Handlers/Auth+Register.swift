import AviaryAPI
import Foundation
import Postgres
import RPC
import ServiceKit

extension AuthService {
    func register(_ params: RegisterParams, context: RPCContext) async throws -> AuthResult {
        let email = try AccountRules.email(params.email)
        let username = try AccountRules.username(params.username)
        let fullname = try AccountRules.fullname(params.fullname)
        let bio = try AccountRules.bio(params.bio ?? "")
        let password = try AccountRules.password(params.password)
        // Only its owner's avatar upload is accepted, and an account that does not exist yet owns none.
        if params.profileImageId != nil {
            throw RPCError.validation(
                "profileImageId cannot be set at registration: upload the image (purpose avatar) once registered, "
                    + "then set it with auth.updateProfile",
                field: "profileImageId")
        }
        try await limits.checkRegistration(address: context.clientAddress)
        // Checked before the costly hash; the unique indexes still decide a race between two registrations.
        switch try await users.takenField(email: email, username: username) {
        case "email": throw RPCError.conflict("an account with this email already exists", field: "email")
        case "username": throw RPCError.conflict("this username is taken", field: "username")
        default: break
        }
        let hash = try await passwords.hash(password)
        let user = UserRecord(
            id: resources.ids.next(), email: email, username: username, fullname: fullname, bio: bio,
            profileImageID: nil, createdAt: Date())
        let session = issuer.prepare()
        try await UserStore.namingConflicts {
            try await resources.postgres.transaction { connection in
                try await UserStore.insert(user, passwordHash: hash, on: connection)
                try await SessionStore.insert(
                    sessionID: session.id, userID: user.id, refreshHash: session.refreshToken.hash, on: connection)
            }
        }
        await resources.replicaReads.recordWrite(to: [Self.profile(user.id)])
        let tokens = try await issuer.tokens(userID: user.id, sessionID: session.id, refreshToken: session.refreshToken)
        return await signedIn(user, tokens: tokens, context: context)
    }
}

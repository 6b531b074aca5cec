import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    func getUser(_ params: GetUserParams, context: RPCContext) async throws -> User {
        let viewer = context.principal?.userID
        let record: UserRecord?
        switch (params.userId, params.username) {
        case (let id?, nil):
            // The counts and relations need only the id: asked for while the account is read.
            async let details = profiles.details(of: [id.value], viewer: viewer, context: context)
            let database = await resources.replicaReads.client(reading: Self.profile(id.value))
            guard let record = try await users.find(id: id.value, using: database) else { throw RPCError.notFound("no such user") }
            guard record.suspension == nil else { throw Self.suspendedProfile }
            return profiles.assemble([record], details: await details, viewer: viewer)[0]
        case (nil, let username?):
            let name = try TextRules.username(username.hasPrefix("@") ? String(username.dropFirst()) : username)
            record = try await users.find(username: name)
        case (.some, .some):
            throw RPCError.validation("give either userId or username, not both", field: "userId")
        case (nil, nil):
            throw RPCError.validation("give userId or username", field: "userId")
        }
        guard let record else { throw RPCError.notFound("no such user") }
        guard record.suspension == nil else { throw Self.suspendedProfile }
        return await profiles.user(record, viewer: viewer, context: context)
    }

    /// What reading a suspended account's profile answers.
    static let suspendedProfile = RPCError.notFound("this account is suspended")

    /// What a read of `user`'s profile names for ``ReplicaReads``: `profile:<id>`, marked when they
    /// register or change it.
    static func profile(_ user: Int64) -> String { "profile:\(user)" }
}

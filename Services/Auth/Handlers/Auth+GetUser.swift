import AviaryAPI
import RPC

extension AuthService {
    func getUser(_ params: GetUserParams, context: RPCContext) async throws -> User {
        let viewer = context.principal?.userID
        let record: UserRecord?
        switch (params.userId, params.username) {
        case (let id?, nil):
            // The counts and relations need only the id: asked for while the account is read.
            async let details = profiles.details(of: [id.value], viewer: viewer, context: context)
            guard let record = try await users.find(id: id.value) else { throw RPCError.notFound("no such user") }
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
        return await profiles.user(record, viewer: viewer, context: context)
    }
}

import AviaryAPI
import RPC

extension AuthService {
    func me(_: Empty, context: RPCContext) async throws -> User {
        let userID = try context.requireUser()
        guard let record = try await users.find(id: userID) else { throw RPCError.notFound("this account no longer exists") }
        return await profiles.user(record, viewer: userID, context: context)
    }
}

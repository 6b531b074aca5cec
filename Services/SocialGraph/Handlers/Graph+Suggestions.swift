import AviaryAPI
import RPC

extension SocialGraphService {
    @Sendable func suggestions(_ params: SuggestionParams, _ context: RPCContext) async throws -> [User] {
        let caller = try context.requireUser()
        let ids = try await store.suggestions(for: caller, limit: (params.limit ?? PageLimit()).value)
        return try await directory.users(ids, viewer: caller, context: context)
    }
}

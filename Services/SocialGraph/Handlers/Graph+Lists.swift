import AviaryAPI
import RPC
import ServiceKit

extension SocialGraphService {
    @Sendable func followers(_ params: UserPageParams, _ context: RPCContext) async throws -> Page<User> {
        try await users(.followers, params, context)
    }

    @Sendable func following(_ params: UserPageParams, _ context: RPCContext) async throws -> Page<User> {
        try await users(.following, params, context)
    }

    /// A page of ids from the store, made into `User`s by one `auth.getUsers` call. The cursor
    /// follows the edges, so a user the accounts service leaves out shifts nothing.
    private func users(_ direction: FollowStore.Direction, _ params: UserPageParams, _ context: RPCContext) async throws
        -> Page<User>
    {
        let cursor = try FollowCursor.decode(params.cursor)
        let page = try await store.page(
            direction, of: params.userId.value, after: cursor, limit: (params.limit ?? PageLimit()).value)
        if page.ids.isEmpty, cursor == nil, try await !directory.exists(params.userId.value, context: context) {
            throw Self.unknownUser(params.userId)
        }
        let users = try await directory.users(page.ids, viewer: context.principal?.userID, context: context)
        return Page(items: users, nextCursor: page.next?.encoded)
    }
}

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
        let user = params.userId.value
        let database = await reads.client(reading: direction.list(of: user))
        let page = try await store.page(direction, of: user, after: cursor, limit: (params.limit ?? PageLimit()).value, using: database)
        if page.ids.isEmpty, cursor == nil, try await !directory.exists(user, context: context) {
            throw Self.unknownUser(params.userId)
        }
        let users = try await directory.users(page.ids, viewer: context.principal?.userID, context: context)
        return Page(items: users, nextCursor: page.next?.encoded)
    }
}

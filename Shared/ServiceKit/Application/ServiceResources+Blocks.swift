import AviaryAPI
import RPC

extension ServiceResources {
    /// Those of `others` that `user` blocked or that blocked `user` (`graph.blockedAmong`, a call
    /// per thousand): what the services refuse or leave out between the two.
    public func blocked(among others: some Collection<Int64>, with user: Int64, context: RPCContext?) async throws -> Set<Int64> {
        let others = Array(Set(others).subtracting([user]))
        var blocked = Set<Int64>()
        for chunk in others.chunks(of: 1000) {
            let ids = try await peers.graph.blockedAmong(BlockedAmongParams(userId: EntityID(user), ids: chunk.map { EntityID($0) }), context: context)
            blocked.formUnion(ids.compactMap { Int64($0) })
        }
        return blocked
    }

    /// Refuses (`forbidden`) what `user` does to `other` when either blocked the other: `action`
    /// completes "you cannot …".
    public func refuseIfBlocked(_ user: Int64, _ other: Int64, _ action: String, context: RPCContext?) async throws {
        guard user != other, try await !blocked(among: [other], with: user, context: context).isEmpty else { return }
        throw RPCError.forbidden("you cannot \(action): one of you blocked the other")
    }
}

import AviaryAPI
import Locking
import Logging
import RPC
import ServiceKit

/// User summaries from the accounts service (`auth.getUsers`), at most one call per request, with
/// a short-lived cache: a busy conversation names the same few senders thousands of times a
/// second, and a renamed user shows the new name within `lifetime`.
final class UserDirectory: Sendable {
    private let resources: ServiceResources
    private let cache = Locked<[Int64: (summary: UserSummary, fetched: ContinuousClock.Instant)]>([:])
    private let lifetime: Duration
    private let capacity: Int

    init(resources: ServiceResources, lifetime: Duration = .seconds(10), capacity: Int = 50_000) {
        self.resources = resources
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// Summaries of `ids` (duplicates allowed); unknown users are left out (and not remembered,
    /// so a new account is found at once).
    func summaries(_ ids: [Int64], context: RPCContext) async throws -> [Int64: UserSummary] {
        let now = ContinuousClock.now
        let lifetime = self.lifetime
        var found: [Int64: UserSummary] = [:]
        var missing: [Int64] = []
        cache.withLock { cache in
            for id in Set(ids) {
                if let entry = cache[id], entry.fetched.duration(to: now) < lifetime {
                    found[id] = entry.summary
                } else {
                    missing.append(id)
                }
            }
        }
        guard !missing.isEmpty else { return found }
        // One call unless a page names more than auth takes at once (20 full groups).
        let fetched = try await inBatches(missing, of: UserSummary.lookupLimit) { batch in
            try await self.getUsers(batch, context: context)
        }
        let capacity = self.capacity
        cache.withLock { cache in
            if cache.count + fetched.count > capacity { cache.removeAll(keepingCapacity: true) }
            for summary in fetched { cache[summary.id.value] = (summary, now) }
        }
        for summary in fetched { found[summary.id.value] = summary }
        return found
    }

    /// The summary shown for a user the accounts service no longer knows (a deleted account).
    static func placeholder(_ id: Int64) -> UserSummary {
        UserSummary(id: EntityID(id), username: "", fullname: "", profileImageUrl: nil)
    }

    private func getUsers(_ ids: [Int64], context: RPCContext) async throws -> [UserSummary] {
        try await resources.peers.auth.getUsers(GetUsersParams(ids: ids.map { EntityID($0) }), context: context)
    }
}

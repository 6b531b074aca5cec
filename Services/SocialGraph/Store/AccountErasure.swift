import Postgres

/// What social-graph erases of a deleted account (``SocialGraphService/erase(user:)``).
extension FollowStore {
    /// Ends every follow of and by `user`, with their count deltas and `unfollow` events (so every
    /// home timeline loses their tweets); returns how many ended.
    func erase(user: Int64) async throws -> Int {
        try await postgres.query(Self.deleteEdgesOfUser, [user]).count
    }

    private static let deleteEdgesOfUser = deletion(of: "follower_id = $1 OR followee_id = $1", prefix: "")
}

extension BlockStore {
    /// Deletes the blocks `user` made or was the object of; returns the users on their other side.
    func erase(user: Int64) async throws -> [Int64] {
        try await postgres.query(
            """
            DELETE FROM social_graph.blocks WHERE blocker_id = $1 OR blocked_id = $1
            RETURNING CASE WHEN blocker_id = $1 THEN blocked_id ELSE blocker_id END
            """, [user]
        ).map { try $0.decode(Int64.self, at: 0) }
    }
}

extension MuteStore {
    /// Deletes the mutes `user` made or was the object of.
    func erase(user: Int64) async throws {
        try await postgres.execute("DELETE FROM social_graph.mutes WHERE muter_id = $1 OR muted_id = $1", [user])
    }
}

extension SocialGraphService {
    /// Erases `user`'s follows both ways, blocks, mutes and lists (and their places on others'),
    /// once their account is deleted: every process forgets that they exist, and the services that
    /// keep blocks in memory forget both sides of each block. Idempotent.
    func erase(user: Int64) async throws {
        // First: a follow let through by a process that still knew them would outlive the erasure.
        try await directory.forget([user])
        _ = try await store.erase(user: user)
        let others = try await blocks.erase(user: user)
        try await blocks.announce([user] + others)
        try await mutes.erase(user: user)
        try await lists.erase(user: user)
    }
}

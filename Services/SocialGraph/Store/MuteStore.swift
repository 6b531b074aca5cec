import AviaryAPI
import EventStreams
import Foundation
import Postgres
import Redis
import ServiceKit

/// Mutes in Postgres: `social_graph.mutes` holds one row per mute while it lasts. Making or
/// changing one writes a `mute` event (timeline takes the muted user's tweets out of the muter's
/// home set); lifting one, or its expiry, writes an `unmute` event while the muter follows the muted
/// user (their tweets come back). The id pages fan-out and rebuilds read leave muters out
/// (``FollowStore/page(_:of:after:limit:using:unmuted:)``).
struct MuteStore: Sendable {
    let postgres: PostgresClient
    let redis: RedisClient

    /// Tells every process that keeps whom users mute (``ServiceResources/muted(by:context:)``) to
    /// forget `muters`: call after their mutes changed and before the change is answered.
    func announce(_ muters: [Int64]) async throws {
        try await LocalCopyKind.mutes(keptBy: .socialGraph).announce(muters, on: redis)
    }

    /// Everyone `muter` mutes now.
    func muted(by muter: Int64) async throws -> Set<Int64> {
        Set(
            try await postgres.query("SELECT muted_id FROM social_graph.mutes WHERE muter_id = $1", [muter])
                .map { try $0.decode(Int64.self, at: 0) })
    }

    /// `muter` mutes `muted` (notifications too when `notifications`) until `until`, or for good.
    func mute(_ muter: Int64, _ muted: Int64, notifications: Bool, until: Date?) async throws {
        _ = try await postgres.query(Self.upsert, [muter, muted, notifications, until])
    }

    /// Lifts `muter`'s mute of `muted`; true if there was one.
    func unmute(_ muter: Int64, _ muted: Int64) async throws -> Bool {
        try await !postgres.query(Self.lift(where: "muter_id = $1 AND muted_id = $2"), [muter, muted]).isEmpty
    }

    /// Lifts the mutes whose time is up; their muters, once each.
    func expire() async throws -> [Int64] {
        Array(Set(try await postgres.query(Self.lift(where: "until <= now()"), []).map { try $0.decode(Int64.self, at: 0) }))
    }

    /// For each pair (user, other): whether `other`'s actions notify `user` no more (a block either
    /// way, or `user` muted `other` with notifications).
    func silenced(_ pairs: [(user: Int64, other: Int64)]) async throws -> [Bool] {
        guard !pairs.isEmpty else { return [] }
        let rows = try await postgres.query(
            """
            SELECT p.ord FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS p (user_id, other_id, ord)
            WHERE EXISTS (
                SELECT 1 FROM social_graph.mutes AS m
                WHERE m.muter_id = p.user_id AND m.muted_id = p.other_id AND m.notifications)
            OR EXISTS (
                SELECT 1 FROM social_graph.blocks AS b
                WHERE (b.blocker_id = p.user_id AND b.blocked_id = p.other_id)
                    OR (b.blocker_id = p.other_id AND b.blocked_id = p.user_id))
            """, [pairs.map(\.user), pairs.map(\.other)])
        var silenced = Array(repeating: false, count: pairs.count)
        for row in rows { silenced[Int(try row.decode(Int64.self, at: 0)) - 1] = true }
        return silenced
    }

    /// A keyset page of the users `muter` muted, most recent mute first (ties by id).
    func page(of muter: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> KeysetPage {
        try await Self.pages.page(of: muter, after: cursor, limit: limit, using: postgres)
    }

    private static let pages = FollowStore.pageStatements(anchor: "muter_id", other: "muted_id", table: "social_graph.mutes")

    /// The event as `Outbox.append` would write it: `{muterId, mutedId, at}`.
    private static let eventPayload = """
        jsonb_build_object(
            'muterId', mute.muter_id::text, 'mutedId', mute.muted_id::text,
            'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        """

    private static let upsert = """
        WITH mute AS (
            INSERT INTO social_graph.mutes (muter_id, muted_id, notifications, until) VALUES ($1, $2, $3, $4)
            ON CONFLICT (muter_id, muted_id) DO UPDATE SET notifications = excluded.notifications, until = excluded.until
            RETURNING muter_id, muted_id
        )
        INSERT INTO social_graph.outbox (topic, type, payload)
        SELECT \(GraphTopic.muted.outboxColumns), \(eventPayload) FROM mute
        """

    /// Deletes the mutes matching `condition`, with an `unmute` event for each whose muter follows
    /// the muted user; one row per mute lifted, its muter's id.
    private static func lift(where condition: String) -> String {
        """
        WITH mute AS (
            DELETE FROM social_graph.mutes WHERE \(condition) RETURNING muter_id, muted_id
        ), event AS (
            INSERT INTO social_graph.outbox (topic, type, payload)
            SELECT \(GraphTopic.unmuted.outboxColumns), \(eventPayload) FROM mute
            WHERE EXISTS (
                SELECT 1 FROM social_graph.follows AS f WHERE f.follower_id = mute.muter_id AND f.followee_id = mute.muted_id)
        )
        SELECT muter_id FROM mute
        """
    }
}

import AviaryAPI
import EventStreams
import Postgres

/// The follow graph in Postgres: `social_graph.follows` holds one row per edge, and each user's
/// totals are their `social_graph.counts` row plus their rows in `social_graph.count_deltas`. A
/// follow or unfollow changes the edge, appends both users' deltas and the outbox row
/// (`social_graph.outbox`, relayed to the `graph` stream) in one transaction, and the deltas only
/// when the edge row really was inserted or deleted, so totals stay exact however many calls race
/// on the same edge, and follows of one popular user do not queue on one counts row.
/// ``CountCompactor`` folds the deltas into the counts.
struct FollowStore: Sendable {
    let postgres: PostgresClient

    /// Adds the edge `follower → followee`; true if it is new, false if it already existed or
    /// either of the two blocked the other (``BlockStore``). A new follow lifts the follower's mute
    /// of the followee (``MuteStore``).
    func follow(follower: Int64, followee: Int64) async throws -> Bool {
        try await !postgres.query(Self.insertEdge, [follower, followee]).isEmpty
    }

    /// Removes the edge `follower → followee`; true if it existed.
    func unfollow(follower: Int64, followee: Int64) async throws -> Bool {
        try await !postgres.query(Self.deleteEdge, [follower, followee]).isEmpty
    }

    /// The event as `Outbox.append` would write it: `{followerId, followeeId, at}`, ids as strings,
    /// the time in RFC 3339 UTC with milliseconds.
    private static let eventPayload = """
        jsonb_build_object(
            'followerId', edge.follower_id::text, 'followeeId', edge.followee_id::text,
            'at', to_char(edge.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        """

    // Each change is one statement, so one round trip and its own transaction: the edge, both
    // deltas and the outbox row commit together or not at all (run again after a lost connection,
    // it finds its work done and changes nothing). The deltas and the event come from the edge
    // CTE: no row inserted or deleted, no count changed and no event.

    private static let insertEdge = """
        WITH edge AS (
            INSERT INTO social_graph.follows (follower_id, followee_id, created_at)
            SELECT $1, $2, now()
            WHERE NOT EXISTS (\(BlockStore.eitherWay))
            ON CONFLICT (follower_id, followee_id) DO NOTHING
            RETURNING follower_id, followee_id, created_at
        ), unmuted AS (
            DELETE FROM social_graph.mutes WHERE muter_id = $1 AND muted_id = $2 AND EXISTS (SELECT 1 FROM edge)
        ), counted AS (
            INSERT INTO social_graph.count_deltas (user_id, followers, following)
            SELECT follower_id, 0, 1 FROM edge
            UNION ALL
            SELECT followee_id, 1, 0 FROM edge
        ), event AS (
            INSERT INTO social_graph.outbox (topic, type, payload)
            SELECT \(GraphTopic.followed.outboxColumns), \(eventPayload) FROM edge
        )
        SELECT 1 FROM edge
        """

    private static let deleteEdge = deletion(of: "follower_id = $1 AND followee_id = $2", prefix: "")

    /// Deletes the edges matching `condition` with their deltas and events, and takes each followee
    /// off the follower's lists (``ListStore``), after the CTEs in `prefix` (each followed by a
    /// comma); selects one row per edge deleted.
    static func deletion(of condition: String, prefix: String) -> String {
        """
        WITH \(prefix) edge AS (
            DELETE FROM social_graph.follows
            WHERE \(condition)
            RETURNING follower_id, followee_id, now() AS created_at
        ), unlisted AS (
            DELETE FROM social_graph.list_members AS m USING edge
            WHERE m.owner_id = edge.follower_id AND m.member_id = edge.followee_id
        ), counted AS (
            INSERT INTO social_graph.count_deltas (user_id, followers, following)
            SELECT follower_id, 0, -1 FROM edge
            UNION ALL
            SELECT followee_id, -1, 0 FROM edge
        ), event AS (
            INSERT INTO social_graph.outbox (topic, type, payload)
            SELECT \(GraphTopic.unfollowed.outboxColumns), \(eventPayload) FROM edge
        )
        SELECT 1 FROM edge
        """
    }
}

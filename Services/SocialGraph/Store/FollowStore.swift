import Postgres

/// The follow graph in Postgres: `social_graph.follows` holds one row per edge and
/// `social_graph.counts` each user's totals. A follow or unfollow changes the edge, both users'
/// counts and the outbox (`social_graph.outbox`, relayed to the `graph` stream) in one
/// transaction, and the counts only when the edge row really was inserted or deleted, so they
/// stay exact however many calls race on the same edge.
struct FollowStore: Sendable {
    let postgres: PostgresClient

    /// Adds the edge `follower → followee`; true if it is new, false if it already existed.
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
    // counts and the outbox row commit together or not at all (run again after a lost connection,
    // it finds its work done and changes nothing). Both statements lock the two counts rows in
    // user-id order, so two of them always take them in the same order and cannot deadlock (A→B
    // racing B→A). The deltas and the event come from the edge CTE: no row inserted or deleted,
    // no count changed and no event.

    private static let insertEdge = """
        WITH edge AS (
            INSERT INTO social_graph.follows (follower_id, followee_id, created_at)
            VALUES ($1, $2, now())
            ON CONFLICT (follower_id, followee_id) DO NOTHING
            RETURNING follower_id, followee_id, created_at
        ), counted AS (
            INSERT INTO social_graph.counts AS c (user_id, followers, following)
            SELECT user_id, followers, following FROM (
                SELECT follower_id AS user_id, 0::bigint AS followers, 1::bigint AS following FROM edge
                UNION ALL
                SELECT followee_id, 1::bigint, 0::bigint FROM edge
            ) AS delta
            ORDER BY user_id
            ON CONFLICT (user_id) DO UPDATE
            SET followers = c.followers + EXCLUDED.followers, following = c.following + EXCLUDED.following
        ), event AS (
            INSERT INTO social_graph.outbox (topic, type, payload)
            SELECT 'graph', 'follow', \(eventPayload) FROM edge
        )
        SELECT 1 FROM edge
        """

    /// The upsert cannot serve here: CHECK constraints judge its candidate row (-1) before the conflict.
    private static let deleteEdge = """
        WITH edge AS (
            DELETE FROM social_graph.follows
            WHERE follower_id = $1 AND followee_id = $2
            RETURNING follower_id, followee_id, now() AS created_at
        ), locked AS (
            SELECT counts.user_id FROM social_graph.counts, edge
            WHERE counts.user_id IN (edge.follower_id, edge.followee_id)
            ORDER BY counts.user_id
            FOR UPDATE OF counts
        ), counted AS (
            UPDATE social_graph.counts AS c
            SET followers = c.followers - CASE WHEN c.user_id = edge.followee_id THEN 1 ELSE 0 END,
                following = c.following - CASE WHEN c.user_id = edge.follower_id THEN 1 ELSE 0 END
            FROM locked, edge
            WHERE c.user_id = locked.user_id
        ), event AS (
            INSERT INTO social_graph.outbox (topic, type, payload)
            SELECT 'graph', 'unfollow', \(eventPayload) FROM edge
        )
        SELECT 1 FROM edge
        """
}

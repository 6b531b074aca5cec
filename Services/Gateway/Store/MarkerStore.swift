import Foundation
import Postgres

/// Where a user stopped reading a timeline, as Mastodon apps keep it across devices
/// (`/api/v1/markers`), in `gateway.markers`.
struct MarkerStore: Sendable {
    let postgres: PostgresClient

    /// The timelines a marker may be kept for.
    enum Timeline: String, CaseIterable, Sendable {
        case home, notifications
    }

    struct Marker: Sendable {
        var timeline: Timeline
        var lastReadID: Int64
        /// How many times it was set before this one (Mastodon's `version`).
        var version: Int64
        var updatedAt: Date
    }

    private static let columns = "timeline, last_read_id, version, updated_at"

    /// `user`'s markers among `timelines`.
    func markers(of user: Int64, among timelines: [Timeline]) async throws -> [Marker] {
        guard !timelines.isEmpty else { return [] }
        return try await postgres.query(
            "SELECT \(Self.columns) FROM gateway.markers WHERE user_id = $1 AND timeline = ANY($2)",
            [user, timelines.map(\.rawValue)]
        ).map(Self.marker)
    }

    /// Sets `user`'s marker of `timeline` to `lastReadID`, one version on; the marker as it is now.
    func set(_ timeline: Timeline, of user: Int64, to lastReadID: Int64) async throws -> Marker {
        try Self.marker(
            try await postgres.query(
                """
                INSERT INTO gateway.markers (user_id, timeline, last_read_id) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, timeline) DO UPDATE
                    SET last_read_id = excluded.last_read_id, version = gateway.markers.version + 1, updated_at = now()
                RETURNING \(Self.columns)
                """, [user, timeline.rawValue, lastReadID]
            )[0])
    }

    private static func marker(_ row: PostgresRow) throws -> Marker {
        Marker(
            timeline: Timeline(rawValue: try row.decode(String.self, at: 0)) ?? .home, lastReadID: try row.decode(Int64.self, at: 1),
            version: try row.decode(Int64.self, at: 2), updatedAt: try row.decode(Date.self, at: 3))
    }
}

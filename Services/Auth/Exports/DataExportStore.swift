import AviaryAPI
import Foundation
import Postgres

/// Data exports in `auth.exports` (``DataExporter`` prepares them).
struct DataExportStore: Sendable {
    let postgres: PostgresClient

    /// One row of `auth.exports`.
    struct Row: Sendable {
        var id: Int64
        var userID: Int64
        var status: DataExportStatus
        var mediaID: Int64?
        var byteSize: Int64?
        var createdAt: Date
        var readyAt: Date?

        static let columns = "id, user_id, status, media_id, byte_size, created_at, ready_at"

        init(row: PostgresRow) throws {
            id = try row.decode(Int64.self, at: 0)
            userID = try row.decode(Int64.self, at: 1)
            status = DataExportStatus(rawValue: try row.decode(String.self, at: 2)) ?? .failed
            mediaID = try row.decode(Int64?.self, at: 3)
            byteSize = try row.decode(Int64?.self, at: 4)
            createdAt = try row.decode(Date.self, at: 5)
            readyAt = try row.decode(Date?.self, at: 6)
        }
    }

    /// What `request` did.
    enum Request: Sendable {
        case started(Row)
        /// Another export of the user's is being prepared.
        case busy
    }

    /// Starts an export of `user`'s data unless one is being prepared; the user's row is locked
    /// so that two requests at once start one.
    func request(id: Int64, user: Int64) async throws -> Request {
        try await postgres.transaction { connection in
            _ = try await connection.query("SELECT 1 FROM auth.users WHERE id = $1 FOR UPDATE", [user])
            let busy = try await connection.query(
                "SELECT 1 FROM auth.exports WHERE user_id = $1 AND status = 'preparing'", [user])
            guard busy.isEmpty else { return .busy }
            let rows = try await connection.query(
                "INSERT INTO auth.exports (id, user_id) VALUES ($1, $2) RETURNING \(Row.columns)", [id, user])
            return .started(try Row(row: rows[0]))
        }
    }

    /// `user`'s last 10 exports, newest first.
    func recent(of user: Int64) async throws -> [Row] {
        try await postgres.query(
            "SELECT \(Row.columns) FROM auth.exports WHERE user_id = $1 ORDER BY id DESC LIMIT 10", [user]
        ).map(Row.init(row:))
    }

    /// Takes the oldest export waiting to be prepared (or whose preparer stopped answering ten
    /// minutes ago), counting the attempt.
    func claim() async throws -> Row? {
        try await postgres.query(
            """
            UPDATE auth.exports SET attempts = attempts + 1, started_at = now()
            WHERE id = (
                SELECT id FROM auth.exports
                WHERE status = 'preparing' AND (started_at IS NULL OR started_at < now() - interval '10 minutes')
                ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
            )
            RETURNING \(Row.columns)
            """
        ).first.map(Row.init(row:))
    }

    func ready(_ id: Int64, media: Int64, byteSize: Int64) async throws {
        try await postgres.execute(
            "UPDATE auth.exports SET status = 'ready', media_id = $2, byte_size = $3, ready_at = now() WHERE id = $1",
            [id, media, byteSize])
    }

    /// Records a failed attempt: tried again soon, unless it was the third.
    func failed(_ id: Int64, error: String) async throws {
        try await postgres.execute(
            """
            UPDATE auth.exports SET error = $2, started_at = NULL,
                status = CASE WHEN attempts >= 3 THEN 'failed' ELSE status END
            WHERE id = $1
            """, [id, error])
    }

    /// Marks the ready exports `ids`, which media no longer has, taken, or expired when they
    /// are past ``retention``: the sweep discards an overdue export's medium before it marks the
    /// export, and a listing in between must not call it downloaded. Their statuses now, by id.
    func gone(_ ids: [Int64]) async throws -> [Int64: DataExportStatus] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await postgres.query(
            """
            UPDATE auth.exports
            SET status = CASE WHEN ready_at < now() - interval '\(Self.retention)' THEN 'expired' ELSE 'downloaded' END
            WHERE id = ANY($1) AND status = 'ready' RETURNING id, status
            """, [ids])
        return Dictionary(
            try rows.map { (try $0.decode(Int64.self, at: 0), DataExportStatus(rawValue: try $0.decode(String.self, at: 1)) ?? .downloaded) },
            uniquingKeysWith: { first, _ in first })
    }

    /// How long a ready export waits for its download (`ExportAPI.exports` says so).
    static let retention = "7 days"

    /// Up to `limit` exports ready for longer than ``retention``: their ids, owners and media.
    func overdue(limit: Int) async throws -> [(id: Int64, user: Int64, media: Int64)] {
        try await postgres.query(
            """
            SELECT id, user_id, media_id FROM auth.exports
            WHERE status = 'ready' AND ready_at < now() - interval '\(Self.retention)' ORDER BY ready_at LIMIT $1
            """, [limit]
        ).map { (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1), try $0.decode(Int64.self, at: 2)) }
    }

    /// Marks the exports `ids` expired (media deleted them).
    func expired(_ ids: [Int64]) async throws {
        try await postgres.execute("UPDATE auth.exports SET status = 'expired' WHERE id = ANY($1) AND status = 'ready'", [ids])
    }

    /// How many exports `user` asked for in the last day.
    func countToday(of user: Int64) async throws -> Int {
        try await Int(postgres.query(
            "SELECT count(*) FROM auth.exports WHERE user_id = $1 AND created_at > now() - interval '1 day'", [user]
        )[0].decode(Int64.self, at: 0))
    }
}

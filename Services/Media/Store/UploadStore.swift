import AviaryAPI
import Foundation
import Postgres

/// Uploads in progress: `media.uploads` and the receipts of their chunks in `media.upload_chunks`.
struct UploadStore: Sendable {
    let postgres: PostgresClient

    /// Records `upload` unless its owner already has `limit` uploads open; then nothing is
    /// recorded and the answer is when the oldest of them expires. The owner's uploads are counted
    /// under a lock of theirs, so concurrent beginnings cannot pass the limit together.
    func create(_ upload: UploadRecord, openLimit limit: Int) async throws -> Date? {
        try await postgres.transaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock($1)", [AdvisoryLockKey.of("aviary.media.uploads:\(upload.ownerID)")])
            let open = try await connection.query(
                "SELECT count(*), min(expires_at) FROM media.uploads WHERE owner_id = $1 AND expires_at > now()",
                [upload.ownerID])
            if let row = open.first, try row.decode(Int64.self, at: 0) >= limit {
                return try row.decode(Date?.self, at: 1) ?? Date()
            }
            try await connection.execute(
                """
                INSERT INTO media.uploads (\(UploadRecord.columns))
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, NULL)
                """,
                [
                    upload.id, upload.ownerID, upload.purpose.rawValue, upload.conversationID, upload.type.rawValue,
                    upload.byteSize, upload.declaredSHA256, upload.chunkBytes, upload.expiresAt,
                ])
            return nil
        }
    }

    func find(_ id: Int64) async throws -> UploadRecord? {
        try await postgres.query("SELECT \(UploadRecord.columns) FROM media.uploads WHERE id = $1", [id])
            .first.map(UploadRecord.init(row:))
    }

    /// Records chunk `index` of `length` bytes (once, however often it is sent) and returns the
    /// bytes received so far; nil when the upload is gone (finished or swept meanwhile).
    func recordChunk(upload: Int64, index: Int, length: Int) async throws -> Int64? {
        try await postgres.query(
            """
            WITH receipt AS (
                INSERT INTO media.upload_chunks (upload_id, chunk, length)
                SELECT id, $2, $3 FROM media.uploads WHERE id = $1
                ON CONFLICT (upload_id, chunk) DO NOTHING
                RETURNING length
            )
            UPDATE media.uploads SET received = received + COALESCE((SELECT sum(length) FROM receipt), 0)
            WHERE id = $1
            RETURNING received
            """,
            [upload, index, length]
        ).first?.decode(Int64.self, at: 0)
    }

    /// Notes that a finish is storing upload `id`'s part as content `sha256`.
    func markStored(_ id: Int64, sha256: String) async throws {
        try await postgres.execute("UPDATE media.uploads SET stored_sha256 = $2 WHERE id = $1", [id, sha256])
    }

    func delete(_ id: Int64) async throws {
        try await postgres.execute("DELETE FROM media.uploads WHERE id = $1", [id])
    }

    /// Deletes up to `limit` uploads that expired and returns their ids (each to one caller only,
    /// however many instances sweep at once).
    func deleteExpired(limit: Int) async throws -> [Int64] {
        try await postgres.query(
            """
            DELETE FROM media.uploads WHERE id IN (
                SELECT id FROM media.uploads WHERE expires_at < now() ORDER BY expires_at LIMIT $1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING id
            """,
            [limit]
        ).map { try $0.decode(Int64.self, at: 0) }
    }

    /// Which of `ids` are uploads still in progress.
    func existing(_ ids: [Int64]) async throws -> Set<Int64> {
        Set(
            try await postgres.query("SELECT id FROM media.uploads WHERE id = ANY($1)", [ids])
                .map { try $0.decode(Int64.self, at: 0) })
    }
}

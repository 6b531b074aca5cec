import AviaryAPI
import Postgres

/// Finished media in `media.items`.
struct MediaStore: Sendable {
    let postgres: PostgresClient

    /// Stores `media` and ends its upload, in one transaction; a second finish of the same upload
    /// changes nothing.
    func finish(_ media: MediaRecord) async throws {
        try await postgres.transaction { connection in
            try await connection.execute(
                """
                INSERT INTO media.items (\(MediaRecord.columns))
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                ON CONFLICT (id) DO NOTHING
                """,
                [
                    media.id, media.ownerID, media.purpose.rawValue, media.conversationID, media.type.rawValue,
                    media.byteSize, media.sha256, media.width, media.height, media.durationMs,
                ])
            try await connection.execute("DELETE FROM media.uploads WHERE id = $1", [media.id])
        }
    }

    /// The finished media among `ids`, by id.
    func find(_ ids: [Int64]) async throws -> [Int64: MediaRecord] {
        let rows = try await postgres.query("SELECT \(MediaRecord.columns) FROM media.items WHERE id = ANY($1)", [ids])
        var found: [Int64: MediaRecord] = [:]
        for row in rows {
            let record = try MediaRecord(row: row)
            found[record.id] = record
        }
        return found
    }
}

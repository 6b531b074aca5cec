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

    /// Deletes `owner`'s media and unfinished uploads, whose account was deleted: returns the
    /// media's ids, the uploads' ids (whose parts go), and the content no medium holds any more.
    func erase(owner: Int64) async throws -> (media: [Int64], uploads: [Int64], unheld: [String]) {
        try await postgres.transaction { connection in
            let media = try await connection.query(
                "DELETE FROM media.items WHERE owner_id = $1 RETURNING id, sha256", [owner])
            let ids = try media.map { try $0.decode(Int64.self, at: 0) }
            let contents = Array(Set(try media.map { try $0.decode(String.self, at: 1) }))
            let unheld = try await connection.query(
                """
                SELECT c.sha256 FROM unnest($1::text[]) AS c(sha256)
                WHERE NOT EXISTS (SELECT 1 FROM media.items AS i WHERE i.sha256 = c.sha256)
                """, [contents]
            ).map { try $0.decode(String.self, at: 0) }
            let uploads = try await connection.query("DELETE FROM media.uploads WHERE owner_id = $1 RETURNING id", [owner])
                .map { try $0.decode(Int64.self, at: 0) }
            return (ids, uploads, unheld)
        }
    }

    /// Takes the data export `id` out of the catalog for its one download; false when it was taken
    /// already (or is no export).
    func take(_ id: Int64) async throws -> Bool {
        try await !postgres.query("DELETE FROM media.items WHERE id = $1 AND purpose = 'export' RETURNING 1", [id]).isEmpty
    }

    /// How many media hold content `sha256`.
    func holders(of sha256: String) async throws -> Int {
        try await Int(postgres.query("SELECT count(*) FROM media.items WHERE sha256 = $1", [sha256])[0].decode(Int64.self, at: 0))
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

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
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                ON CONFLICT (id) DO NOTHING
                """,
                [
                    media.id, media.ownerID, media.purpose.rawValue, media.conversationID, media.type.rawValue,
                    media.byteSize, media.sha256, media.width, media.height, media.durationMs, media.description,
                    media.focus?.x, media.focus?.y,
                ])
            try await connection.execute("DELETE FROM media.uploads WHERE id = $1", [media.id])
        }
    }

    /// What a deletion of media took: their ids, the unfinished uploads' (whose parts go), and
    /// the content no medium holds any more (whose files go).
    struct Deletion: Sendable {
        var media: [Int64] = []
        var uploads: [Int64] = []
        var unheld: [String] = []
    }

    /// Deletes `owner`'s media and unfinished uploads, whose account was deleted.
    func erase(owner: Int64) async throws -> Deletion {
        try await postgres.transaction { connection in
            var deletion = try await Self.delete(where: "owner_id = $1", [owner], on: connection)
            deletion.uploads = try await connection.query("DELETE FROM media.uploads WHERE owner_id = $1 RETURNING id", [owner])
                .map { try $0.decode(Int64.self, at: 0) }
            return deletion
        }
    }

    /// Deletes the media among `ids` that `owner` uploaded for tweets, messages or an export (what
    /// deleting a message for everyone leaves behind, or an export never downloaded).
    func discard(_ ids: [Int64], owner: Int64) async throws -> Deletion {
        try await postgres.transaction { connection in
            try await Self.delete(where: "id = ANY($1) AND owner_id = $2 AND purpose IN ('tweet', 'message', 'export')", [ids, owner], on: connection)
        }
    }

    private static func delete(
        where condition: String, _ parameters: [any PostgresEncodable], on connection: PostgresConnection
    ) async throws -> Deletion {
        let media = try await connection.query("DELETE FROM media.items WHERE \(condition) RETURNING id, sha256", parameters)
        let contents = Array(Set(try media.map { try $0.decode(String.self, at: 1) }))
        let unheld = try await connection.query(
            """
            SELECT c.sha256 FROM unnest($1::text[]) AS c(sha256)
            WHERE NOT EXISTS (SELECT 1 FROM media.items AS i WHERE i.sha256 = c.sha256)
            """, [contents]
        ).map { try $0.decode(String.self, at: 0) }
        return Deletion(media: try media.map { try $0.decode(Int64.self, at: 0) }, unheld: unheld)
    }

    /// Sets the description and focal point of `owner`'s medium `id` (nil for either leaves it as it
    /// is; `.some(nil)` removes it); the record after, or nil when no medium of theirs has that id.
    func describe(_ id: Int64, owner: Int64, description: String??, focus: MediaFocus??) async throws -> MediaRecord? {
        try await postgres.query(
            """
            UPDATE media.items SET
                description = CASE WHEN $3 THEN $4::text ELSE description END,
                focus_x = CASE WHEN $5 THEN $6::float8 ELSE focus_x END,
                focus_y = CASE WHEN $5 THEN $7::float8 ELSE focus_y END
            WHERE id = $1 AND owner_id = $2 AND purpose <> 'export'
            RETURNING \(MediaRecord.columns)
            """,
            [id, owner, description != nil, description ?? nil, focus != nil, (focus ?? nil)?.x, (focus ?? nil)?.y]
        ).first.map(MediaRecord.init(row:))
    }

    /// Takes the data export `id` out of the catalog for its one download; false when it was taken
    /// already (or is no export).
    func take(_ id: Int64) async throws -> Bool {
        try await !postgres.query("DELETE FROM media.items WHERE id = $1 AND purpose = 'export' RETURNING 1", [id]).isEmpty
    }

    /// Which of `contents` a medium holds, or an upload that was being finished (its content stored
    /// before its medium is recorded).
    func held(among contents: [String]) async throws -> Set<String> {
        Set(
            try await postgres.query(
                """
                SELECT c.sha256 FROM unnest($1::text[]) AS c(sha256)
                WHERE EXISTS (SELECT 1 FROM media.items AS i WHERE i.sha256 = c.sha256)
                    OR EXISTS (SELECT 1 FROM media.uploads AS u WHERE u.stored_sha256 = c.sha256)
                """, [contents]
            ).map { try $0.decode(String.self, at: 0) })
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

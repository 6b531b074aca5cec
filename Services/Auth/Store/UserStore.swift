import AviaryAPI
import EventStreams
import Foundation
import Postgres
import RPC

/// `auth.users`: accounts, their profile and their password hash. Emails are unique however they
/// are capitalised (`users_email_key` on `lower(email)`); usernames are stored lower-cased and
/// unique (`users_username_key`).
struct UserStore: Sendable {
    let postgres: PostgresClient

    /// Runs `body`, turning a unique violation into a `conflict` naming the field it concerns, so
    /// that of two registrations racing for one email the loser hears which value was taken.
    static func namingConflicts<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError where error.isUniqueViolation {
            switch error.constraint {
            case "users_email_key": throw RPCError.conflict("an account with this email already exists", field: "email")
            case "users_username_key": throw RPCError.conflict("this username is taken", field: "username")
            default: throw error
            }
        }
    }

    /// Adds an account, inside the caller's transaction.
    static func insert(_ user: UserRecord, passwordHash: String?, on connection: PostgresConnection) async throws {
        try await connection.execute(
            """
            INSERT INTO auth.users (id, email, username, fullname, bio, profile_image_id, password_hash, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [user.id, user.email, user.username, user.fullname, user.bio, user.profileImageID, passwordHash, user.createdAt])
    }

    /// Which of `email` and `username` an account already has ("email" first), or nil.
    func takenField(email: String, username: String) async throws -> String? {
        let rows = try await postgres.query(
            """
            SELECT bool_or(lower(email) = lower($1)), bool_or(username = $2)
            FROM auth.users WHERE lower(email) = lower($1) OR username = $2
            """, [email, username])
        guard let row = rows.first else { return nil }
        if try row.decode(Bool?.self, at: 0) == true { return "email" }
        if try row.decode(Bool?.self, at: 1) == true { return "username" }
        return nil
    }

    /// The account a login names (an email when it holds `@`, else a username) and its password
    /// hash (nil for accounts that only sign in with Google).
    func credentials(login: String) async throws -> (user: UserRecord, passwordHash: String?)? {
        let sql =
            login.contains("@")
            ? "SELECT \(UserRecord.columns), password_hash FROM auth.users WHERE lower(email) = lower($1) AND deleted_at IS NULL"
            : "SELECT \(UserRecord.columns), password_hash FROM auth.users WHERE username = lower($1) AND deleted_at IS NULL"
        guard let row = try await postgres.query(sql, [login]).first else { return nil }
        return (try UserRecord(row: row), try row.decode(String?.self, at: UserRecord.columnCount))
    }

    /// The password hash of `userID`; nil when the account has none (it signs in with Google).
    func passwordHash(userID: Int64) async throws -> String? {
        try await postgres.query("SELECT password_hash FROM auth.users WHERE id = $1", [userID]).first
            .flatMap { try $0.decode(String?.self, at: 0) }
    }

    func setPasswordHash(_ hash: String, userID: Int64) async throws {
        try await postgres.execute(Self.passwordHashUpdate, [userID, hash])
    }

    /// Sets `userID`'s password hash (nil: the account has no password), inside the caller's transaction.
    static func setPasswordHash(_ hash: String?, userID: Int64, on connection: PostgresConnection) async throws {
        try await connection.execute(passwordHashUpdate, [userID, hash])
    }

    private static let passwordHashUpdate = "UPDATE auth.users SET password_hash = $2, updated_at = now() WHERE id = $1"

    /// Replaces `userID`'s password hash and ends their sessions but `keeping`, in one transaction
    /// that commits only after `announce` has published the ended sessions: when anything fails,
    /// nothing has changed (the old password still works, and a retry ends the same sessions).
    func replacePassword(
        with hash: String, userID: Int64, keeping: Int64?, announce: @Sendable ([Int64]) async throws -> Void
    ) async throws -> [Int64] {
        try await postgres.transaction { connection in
            try await Self.setPasswordHash(hash, userID: userID, on: connection)
            let ended = try await SessionStore.revokeAll(userID: userID, keeping: keeping, on: connection)
            try await announce(ended)
            return ended
        }
    }

    /// Redeems the password reset token `token` and, in the same transaction, sets the account's
    /// password to `hash` and ends all its sessions; nil when the token is not good.
    func resetPassword(
        with hash: String, redeeming token: [UInt8], announce: @Sendable ([Int64]) async throws -> Void
    ) async throws -> [Int64]? {
        try await postgres.transaction { connection in
            guard let userID = try await EmailTokenStore.redeemReset(token, on: connection) else { return nil }
            try await Self.setPasswordHash(hash, userID: userID, on: connection)
            let ended = try await SessionStore.revokeAll(userID: userID, keeping: nil, on: connection)
            try await announce(ended)
            return ended
        }
    }

    /// Deletes `userID`'s account: in one transaction its sessions end (announced before the
    /// commit), its row is emptied and marked deleted (its email freed at once: an address of its
    /// own, `deleted-<id>@invalid`, takes its place), its Google links and mail tokens go, and the
    /// `users`/`deleted` event is written for the other services to erase theirs. False when it was
    /// gone already.
    func delete(userID: Int64, announce: @Sendable ([Int64]) async throws -> Void) async throws -> Bool {
        try await postgres.transaction { connection in
            let deleted = try await connection.query(
                """
                WITH deleted AS (
                    UPDATE auth.users SET deleted_at = now(), email = 'deleted-' || id || '@invalid', fullname = '', bio = '',
                        profile_image_id = NULL, password_hash = NULL, role = 'member', email_verified_at = NULL,
                        updated_at = now()
                    WHERE id = $1 AND deleted_at IS NULL
                    RETURNING id
                ), identities AS (
                    DELETE FROM auth.identities WHERE user_id IN (SELECT id FROM deleted)
                ), tokens AS (
                    DELETE FROM auth.email_tokens WHERE user_id IN (SELECT id FROM deleted)
                ), event AS (
                    INSERT INTO auth.outbox (topic, type, payload)
                    SELECT \(UsersTopic.deleted.outboxColumns), jsonb_build_object('userId', id::text) FROM deleted
                )
                SELECT 1 FROM deleted
                """, [userID])
            guard !deleted.isEmpty else { return false }
            try await announce(try await SessionStore.revokeAll(userID: userID, keeping: nil, on: connection))
            return true
        }
    }

    /// Deletes the rows of accounts deleted 30 days ago or more, with their sessions: their
    /// usernames are free again. Returns how many went.
    func purgeDeleted() async throws -> Int {
        try await postgres.transaction { connection in
            let ids = try await connection.query(
                "SELECT id FROM auth.users WHERE deleted_at < now() - interval '30 days' LIMIT 1000 FOR UPDATE"
            ).map { try $0.decode(Int64.self, at: 0) }
            guard !ids.isEmpty else { return 0 }
            try await connection.execute("DELETE FROM auth.sessions WHERE user_id = ANY($1)", [ids])
            try await connection.execute("DELETE FROM auth.users WHERE id = ANY($1)", [ids])
            return ids.count
        }
    }

    /// With `database`, read there (a replica's client, ``AuthService/profile(_:)``).
    func find(id: Int64, using database: PostgresClient? = nil) async throws -> UserRecord? {
        try await (database ?? postgres).query("SELECT \(UserRecord.columns) FROM auth.users WHERE id = $1 AND deleted_at IS NULL", [id]).first
            .map { try UserRecord(row: $0) }
    }

    func find(username: String) async throws -> UserRecord? {
        try await postgres.query("SELECT \(UserRecord.columns) FROM auth.users WHERE username = lower($1) AND deleted_at IS NULL", [username])
            .first.map { try UserRecord(row: $0) }
    }

    /// The accounts among `ids` that exist, in no particular order.
    func find(ids: [Int64]) async throws -> [UserRecord] {
        guard !ids.isEmpty else { return [] }
        return try await postgres.query("SELECT \(UserRecord.columns) FROM auth.users WHERE id = ANY($1) AND deleted_at IS NULL", [ids])
            .map { try UserRecord(row: $0) }
    }

    /// The accounts with these (lower-case) usernames that exist, in no particular order.
    func find(usernames: [String]) async throws -> [UserRecord] {
        guard !usernames.isEmpty else { return [] }
        return try await postgres.query("SELECT \(UserRecord.columns) FROM auth.users WHERE username = ANY($1) AND deleted_at IS NULL", [usernames])
            .map { try UserRecord(row: $0) }
    }

    /// Changes the given profile fields (nil leaves one as it is); nil when the account is gone. In
    /// the same statement, a `users`/`updated` event `{userId}` goes to the outbox, so services that
    /// cache profiles (tweets) drop theirs.
    func updateProfile(
        userID: Int64, fullname: String?, bio: String?, username: String?, profileImage: UpdateProfileParams.ProfileImageChange
    ) async throws -> UserRecord? {
        let (image, removesImage): (Int64?, Bool) =
            switch profileImage {
            case .keep: (nil, false)
            case .remove: (nil, true)
            case .set(let id): (id.value, false)
            }
        return try await Self.namingConflicts {
            try await postgres.query(
                """
                WITH updated AS (
                    UPDATE auth.users SET
                        fullname = coalesce($2, fullname), bio = coalesce($3, bio), username = coalesce($4, username),
                        profile_image_id = CASE WHEN $6 THEN NULL ELSE coalesce($5, profile_image_id) END, updated_at = now()
                    WHERE id = $1
                    RETURNING \(UserRecord.columns)
                ), event AS (
                    INSERT INTO auth.outbox (topic, type, payload)
                    SELECT \(UsersTopic.updated.outboxColumns), jsonb_build_object('userId', id::text) FROM updated
                )
                SELECT * FROM updated
                """, [userID, fullname, bio, username, image, removesImage]
            ).first.map { try UserRecord(row: $0) }
        }
    }

    /// Up to `limit` accounts matching `query` (lower-case, no `@`), best first, each with a score:
    /// an exact username counts most, then a username prefix, then a prefix of a word of the full
    /// name, then trigram similarity (pg_trgm), which also finds names typed with a typo. The word
    /// similarity threshold is lowered from pg_trgm's 0.6 to 0.45, where one letter left out of a
    /// seven-letter surname still matches.
    /// Read with `database`: a replica's client unless the searcher changed their profile lately.
    func search(_ query: String, limit: Int, using database: PostgresClient) async throws -> [(user: UserRecord, score: Double)] {
        let escaped = query.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
        return try await database.transaction { connection in
            try await connection.execute("SET LOCAL pg_trgm.word_similarity_threshold = 0.45")
            return try await connection.query(
                """
                SELECT \(UserRecord.columns),
                    (CASE WHEN username = $1 THEN 4 ELSE 0 END
                     + CASE WHEN username LIKE $2 THEN 2 ELSE 0 END
                     + CASE WHEN lower(fullname) LIKE $2 OR lower(fullname) LIKE $3 THEN 1 ELSE 0 END
                     + greatest(similarity(username, $1), word_similarity($1, lower(fullname))))::float8
                FROM auth.users
                WHERE (username LIKE $2 OR lower(fullname) LIKE $2 OR lower(fullname) LIKE $3
                    OR username % $1 OR $1 <% lower(fullname)) AND suspended_at IS NULL AND deleted_at IS NULL
                ORDER BY \(UserRecord.columnCount + 1) DESC, id
                LIMIT $4
                """, [query, escaped + "%", "% " + escaped + "%", limit]
            ).map { (try UserRecord(row: $0), try $0.decode(Double.self, at: UserRecord.columnCount)) }
        }
    }
}

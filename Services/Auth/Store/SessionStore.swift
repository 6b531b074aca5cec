import Postgres

/// `auth.sessions` and `auth.spent_refresh_tokens`: one row per sign-in, holding the hash of its
/// current refresh token; the hashes it already exchanged are kept to recognise a stolen copy.
struct SessionStore: Sendable {
    let postgres: PostgresClient

    /// What presenting a refresh token did.
    enum Rotation: Sendable {
        /// The token was current: it is now spent and `next` replaced it.
        case rotated(userID: Int64, sessionID: Int64)
        /// The token was already spent: someone replays it, so the whole session was revoked.
        case reused(sessionID: Int64)
        /// The token belongs to a session that has ended.
        case ended
        /// No session ever had this token.
        case unknown
    }

    /// Records a new session, inside the caller's transaction.
    static func insert(sessionID: Int64, userID: Int64, refreshHash: [UInt8], on connection: PostgresConnection) async throws {
        try await connection.execute(
            "INSERT INTO auth.sessions (id, user_id, refresh_hash) VALUES ($1, $2, $3)", [sessionID, userID, refreshHash])
    }

    func insert(sessionID: Int64, userID: Int64, refreshHash: [UInt8]) async throws {
        try await postgres.execute(
            "INSERT INTO auth.sessions (id, user_id, refresh_hash) VALUES ($1, $2, $3)", [sessionID, userID, refreshHash])
    }

    /// Exchanges the refresh token hashed as `presented` for `next`. The session row is locked, so of
    /// two calls with the same token exactly one rotates it and the other sees it spent.
    func rotate(presented: [UInt8], next: [UInt8]) async throws -> Rotation {
        try await postgres.transaction { connection in
            let current = try await connection.query(
                "SELECT id, user_id, revoked_at IS NOT NULL FROM auth.sessions WHERE refresh_hash = $1 FOR UPDATE", [presented])
            if let row = current.first {
                let sessionID = try row.decode(Int64.self, at: 0)
                if try row.decode(Bool.self, at: 2) { return .ended }
                try await connection.execute(
                    "UPDATE auth.sessions SET refresh_hash = $2, last_used_at = now() WHERE id = $1", [sessionID, next])
                try await connection.execute(
                    "INSERT INTO auth.spent_refresh_tokens (refresh_hash, session_id) VALUES ($1, $2)", [presented, sessionID])
                return .rotated(userID: try row.decode(Int64.self, at: 1), sessionID: sessionID)
            }
            let spent = try await connection.query(
                "SELECT session_id FROM auth.spent_refresh_tokens WHERE refresh_hash = $1", [presented])
            guard let row = spent.first else { return .unknown }
            let sessionID = try row.decode(Int64.self, at: 0)
            try await connection.execute(
                "UPDATE auth.sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL", [sessionID])
            return .reused(sessionID: sessionID)
        }
    }

    /// Deletes a session outright (one never handed out: see `SessionIssuer.discard`).
    func delete(sessionID: Int64) async throws {
        try await postgres.execute("DELETE FROM auth.sessions WHERE id = $1", [sessionID])
    }

    /// Ends one session of `userID`; false when it was not theirs or already ended.
    @discardableResult
    func revoke(sessionID: Int64, userID: Int64) async throws -> Bool {
        try await postgres.execute(
            "UPDATE auth.sessions SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
            [sessionID, userID]) == 1
    }

    /// Ends every live session of `userID` but `keeping`, inside the caller's transaction, returning
    /// the ids it ended. Their tokens are refused everywhere only once the ids are announced
    /// (`SessionRevocations.revoke`): announce them before the transaction commits.
    static func revokeAll(userID: Int64, keeping: Int64?, on connection: PostgresConnection) async throws -> [Int64] {
        try await connection.query(
            """
            UPDATE auth.sessions SET revoked_at = now()
            WHERE user_id = $1 AND revoked_at IS NULL AND id <> $2
            RETURNING id
            """, [userID, keeping ?? 0]
        ).map { try $0.decode(Int64.self, at: 0) }
    }
}

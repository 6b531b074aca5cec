import Postgres

/// `auth.sessions` and `auth.spent_refresh_tokens`: one row per sign-in, holding the hash of its
/// current refresh token; the hashes it already exchanged are kept to recognise a stolen copy.
struct SessionStore: Sendable {
    let postgres: PostgresClient
    var lifetime = SessionLifetime()

    /// What presenting a refresh token did.
    enum Rotation: Sendable {
        /// The token was current: it is now spent and `next` replaced it.
        case rotated(userID: Int64, sessionID: Int64)
        /// The token was already spent: someone replays it, so the whole session was revoked.
        case reused(sessionID: Int64)
        /// The token belongs to a session that has ended.
        case ended
        /// The session went unused too long, or is too old: it was ended now.
        case expired(sessionID: Int64)
        /// No session ever had this token.
        case unknown
    }

    /// Records a new session, inside the caller's transaction.
    static func insert(sessionID: Int64, userID: Int64, refreshHash: [UInt8], on connection: PostgresConnection) async throws {
        try await connection.execute(
            "INSERT INTO auth.sessions (id, user_id, refresh_hash) VALUES ($1, $2, $3)", [sessionID, userID, refreshHash])
    }

    /// Records a new session of `userID` unless the account is suspended (false then). The
    /// account's row is locked for share: a suspension committing meanwhile either is seen here or
    /// waits for this session, and then ends it.
    func insert(sessionID: Int64, userID: Int64, refreshHash: [UInt8]) async throws -> Bool {
        try await postgres.execute(
            """
            INSERT INTO auth.sessions (id, user_id, refresh_hash)
            SELECT $1, id, $3 FROM auth.users WHERE id = $2 AND suspended_at IS NULL AND deleted_at IS NULL FOR SHARE
            """, [sessionID, userID, refreshHash]) == 1
    }

    /// Exchanges the refresh token hashed as `presented` for `next`. The session row is locked, so of
    /// two calls with the same token exactly one rotates it and the other sees it spent.
    func rotate(presented: [UInt8], next: [UInt8]) async throws -> Rotation {
        try await postgres.transaction { connection in
            let current = try await connection.query(
                """
                SELECT id, user_id, revoked_at IS NOT NULL,
                    last_used_at < now() - make_interval(secs => $2) OR created_at < now() - make_interval(secs => $3)
                FROM auth.sessions WHERE refresh_hash = $1 FOR UPDATE
                """, [presented, lifetime.idle.seconds, lifetime.maximum.seconds])
            if let row = current.first {
                let sessionID = try row.decode(Int64.self, at: 0)
                if try row.decode(Bool.self, at: 2) { return .ended }
                if try row.decode(Bool.self, at: 3) {
                    try await connection.execute("UPDATE auth.sessions SET revoked_at = now() WHERE id = $1", [sessionID])
                    return .expired(sessionID: sessionID)
                }
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

    /// The sessions revoked within `window` (through the index of ended sessions).
    func revoked(within window: Duration) async throws -> [Int64] {
        try await postgres.query(
            "SELECT id FROM auth.sessions WHERE revoked_at > now() - make_interval(secs => $1)", [window.seconds]
        ).map { try $0.decode(Int64.self, at: 0) }
    }

    /// Deletes up to `limit` sessions that ended more than `lifetime.kept` ago, with their spent
    /// tokens; returns how many. Ended: revoked (a session past its maximum age is revoked at its
    /// next refresh), or unused past the idle lifetime. Both are indexed.
    func deleteEnded(limit: Int) async throws -> Int {
        try await postgres.execute(
            """
            DELETE FROM auth.sessions WHERE id IN (
                SELECT id FROM auth.sessions WHERE revoked_at < now() - make_interval(secs => $1)
                UNION ALL
                SELECT id FROM auth.sessions WHERE last_used_at < now() - make_interval(secs => $2)
                LIMIT $3)
            """,
            [lifetime.kept.seconds, (lifetime.idle + lifetime.kept).seconds, Int64(limit)])
    }

    /// Deletes up to `limit` refresh tokens spent more than `lifetime.kept` ago, of sessions still
    /// going; returns how many. One presented again after that is refused as unknown, without
    /// ending its session: a thief's copy that old is rarely the danger, a table that grows with
    /// every refresh of every session for a year is.
    func deleteLongSpent(limit: Int) async throws -> Int {
        try await postgres.execute(
            """
            DELETE FROM auth.spent_refresh_tokens WHERE refresh_hash IN (
                SELECT refresh_hash FROM auth.spent_refresh_tokens WHERE spent_at < now() - make_interval(secs => $1)
                LIMIT $2)
            """,
            [lifetime.kept.seconds, Int64(limit)])
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

/// How long sessions last, from `AVIARY_AUTH_SESSION_IDLE_DAYS` (30) and `AVIARY_AUTH_SESSION_MAX_DAYS`
/// (365): a refresh token left unused for `idle`, or presented after `maximum` from the sign-in,
/// ends its session, so a token stolen from a forgotten device stops working.
struct SessionLifetime: Sendable {
    var idle: Duration = .seconds(30 * 86_400)
    var maximum: Duration = .seconds(365 * 86_400)
    /// How long an ended session's row is kept: a spent token presented again within it still ends
    /// nothing new but is told apart from a forged one.
    var kept: Duration = .seconds(30 * 86_400)
}

extension Duration {
    /// Whole seconds, for SQL intervals.
    fileprivate var seconds: Int64 { components.seconds }
}

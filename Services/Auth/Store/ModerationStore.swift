import AviaryAPI
import EventStreams
import Foundation
import Postgres

/// Admins (`auth.users.role`), suspensions (`auth.users.suspended_at`) and `auth.reports`.
struct ModerationStore: Sendable {
    let postgres: PostgresClient

    /// A row of `auth.reports`, its tweets still as the JSON array they were stored as.
    struct ReportRow: Sendable {
        var id: Int64
        var reporterID: Int64
        var userID: Int64
        var reason: ReportReason
        var comment: String
        var tweets: String
        var messages: String
        var createdAt: Date
        var resolvedAt: Date?
        var resolvedBy: Int64?

        static let columns =
            "id, reporter_id, user_id, reason, comment, tweets::text, messages::text, created_at, resolved_at, resolved_by"

        init(row: PostgresRow) throws {
            id = try row.decode(at: 0)
            reporterID = try row.decode(at: 1)
            userID = try row.decode(at: 2)
            reason = ReportReason(rawValue: try row.decode(String.self, at: 3)) ?? .other
            comment = try row.decode(at: 4)
            tweets = try row.decode(at: 5)
            messages = try row.decode(at: 6)
            createdAt = try row.decode(at: 7)
            resolvedAt = try row.decode(at: 8)
            resolvedBy = try row.decode(at: 9)
        }
    }

    /// What ``suspend(_:reason:announce:)`` did.
    enum SuspensionOutcome: Sendable {
        case suspended(endedSessions: [Int64])
        case unknownUser
        case admin
    }

    func isAdmin(_ userID: Int64) async throws -> Bool {
        try await postgres.query("SELECT role = 'admin' FROM auth.users WHERE id = $1", [userID]).first?.decode(Bool.self, at: 0)
            ?? false
    }

    /// Gives the account named `username` the role `admin` or takes it back (`member`); false when
    /// no account has that name.
    func setRole(admin: Bool, username: String) async throws -> Bool {
        try await postgres.execute(
            "UPDATE auth.users SET role = $2, updated_at = now() WHERE username = lower($1)", [username, admin ? "admin" : "member"]) == 1
    }

    func insertReport(
        id: Int64, reporterID: Int64, userID: Int64, reason: ReportReason, comment: String, tweets: String, messages: String
    ) async throws {
        try await postgres.execute(
            """
            INSERT INTO auth.reports (id, reporter_id, user_id, reason, comment, tweets, messages)
            VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)
            """, [id, reporterID, userID, reason.rawValue, comment, tweets, messages])
    }

    /// Up to `limit` reports of `status`, newest first, older than the report `before` when given.
    func reports(_ status: ReportStatus, before: Int64?, limit: Int) async throws -> [ReportRow] {
        let resolved = status == .resolved ? "resolved_at IS NOT NULL" : "resolved_at IS NULL"
        return try await postgres.query(
            """
            SELECT \(ReportRow.columns) FROM auth.reports
            WHERE \(resolved) AND ($1::bigint IS NULL OR id < $1)
            ORDER BY id DESC LIMIT $2
            """, [before, limit]
        ).map(ReportRow.init(row:))
    }

    /// Marks the report resolved by `admin` (unless it already is) and returns it; nil when there
    /// is no such report.
    func resolve(_ reportID: Int64, by admin: Int64) async throws -> ReportRow? {
        try await postgres.query(
            """
            WITH resolved AS (
                UPDATE auth.reports SET resolved_at = now(), resolved_by = $2
                WHERE id = $1 AND resolved_at IS NULL
                RETURNING \(ReportRow.columns)
            )
            SELECT * FROM resolved
            UNION ALL
            SELECT \(ReportRow.columns) FROM auth.reports WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM resolved)
            """, [reportID, admin]
        ).first.map(ReportRow.init(row:))
    }

    /// Suspends `userID` (an admin cannot be), or gives a suspended account the new reason, and
    /// ends its sessions, in one transaction that commits after `announce` published them. A new
    /// suspension sends `users`/`suspended` through the outbox in the same transaction.
    func suspend(
        _ userID: Int64, reason: String, announce: @Sendable ([Int64]) async throws -> Void
    ) async throws -> SuspensionOutcome {
        try await postgres.transaction { connection in
            // Locked: a sign-in starting a session waits for the suspension, then sees it.
            guard
                let row = try await connection.query(
                    "SELECT role = 'admin', suspended_at IS NOT NULL FROM auth.users WHERE id = $1 FOR UPDATE", [userID]
                ).first
            else { return .unknownUser }
            if try row.decode(Bool.self, at: 0) { return .admin }
            try await connection.execute(
                "UPDATE auth.users SET suspended_at = coalesce(suspended_at, now()), suspension_reason = $2 WHERE id = $1",
                [userID, reason])
            if try !row.decode(Bool.self, at: 1) {
                try await Self.announce(UsersTopic.suspended, of: userID, on: connection)
            }
            let ended = try await SessionStore.revokeAll(userID: userID, keeping: nil, on: connection)
            try await announce(ended)
            return .suspended(endedSessions: ended)
        }
    }

    /// Lifts `userID`'s suspension, sending `users`/`reinstated` in the same transaction; nil when
    /// there is no such account, false when it was not suspended.
    func unsuspend(_ userID: Int64) async throws -> Bool? {
        try await postgres.transaction { connection in
            guard
                let row = try await connection.query(
                    "SELECT suspended_at IS NOT NULL FROM auth.users WHERE id = $1 FOR UPDATE", [userID]
                ).first
            else { return nil }
            guard try row.decode(Bool.self, at: 0) else { return false }
            try await connection.execute(
                "UPDATE auth.users SET suspended_at = NULL, suspension_reason = NULL WHERE id = $1", [userID])
            try await Self.announce(UsersTopic.reinstated, of: userID, on: connection)
            return true
        }
    }

    private static func announce(_ kind: EventKind<ProfileChanged>, of userID: Int64, on connection: PostgresConnection) async throws {
        try await connection.execute(
            """
            INSERT INTO auth.outbox (topic, type, payload)
            SELECT \(kind.outboxColumns), jsonb_build_object('userId', id::text) FROM auth.users WHERE id = $1
            """, [userID])
    }
}

extension AuthService {
    /// For `aviary admin`: gives the account named `username` the admin role, or takes it back;
    /// false when no account has that name.
    public static func setAdmin(_ admin: Bool, username: String, postgres: PostgresClient) async throws -> Bool {
        try await ModerationStore(postgres: postgres).setRole(admin: admin, username: username)
    }
}

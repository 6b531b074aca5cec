import Foundation
import Postgres

/// Single-use tokens sent by mail (`auth.email_tokens`): to prove an account's email is its owner's
/// and to reset a forgotten password. A token is 32 random bytes (``RefreshToken``'s form), kept
/// by its SHA-256 only; issuing one ends the account's earlier ones of the same purpose and queues
/// its mail (``MailQueue``) in the same statement; redeeming one marks it used, so it works once.
struct EmailTokenStore: Sendable {
    let postgres: PostgresClient

    enum Purpose: String, Sendable {
        case verify, reset

        /// How long a token stays good.
        var lifetime: Duration {
            switch self {
            case .verify: .seconds(86_400)
            case .reset: .seconds(3600)
            }
        }
    }

    /// Who a token is issued to: an account by id, or whichever account has an email.
    enum Account: Sendable {
        case id(Int64)
        case email(String)
    }

    /// Issues `token` for `purpose` to `account` and queues the mail `mail(address)` under `mailID`;
    /// false when no account matches (nothing is written then).
    func issue(
        _ purpose: Purpose, token: RefreshToken, to account: Account, mailID: Int64, subject: String, body: String
    ) async throws -> Bool {
        let (id, email): (Int64?, String?) =
            switch account {
            case .id(let id): (id, nil)
            case .email(let email): (nil, email)
            }
        let rows = try await postgres.query(
            """
            WITH target AS (
                SELECT id, email FROM auth.users
                WHERE (id = $1::bigint OR lower(email) = lower($2::text)) AND deleted_at IS NULL LIMIT 1
            ), ended AS (
                UPDATE auth.email_tokens AS e SET used_at = now() FROM target
                WHERE e.user_id = target.id AND e.purpose = $3 AND e.used_at IS NULL
            ), issued AS (
                INSERT INTO auth.email_tokens (token_hash, user_id, purpose, email, expires_at)
                SELECT $4, id, $3, email, now() + $5 * interval '1 second' FROM target
                RETURNING email
            )
            INSERT INTO auth.mail_outbox (id, recipient, subject, body) SELECT $6, email, $7, $8 FROM issued RETURNING id
            """,
            [id, email, purpose.rawValue, token.hash, purpose.lifetime.components.seconds, mailID, subject, body])
        return !rows.isEmpty
    }

    /// Marks the email of the account whose verification token `hash` is, if the token is good
    /// and the account's email is still the one it was sent to; false otherwise.
    func verify(_ hash: [UInt8]) async throws -> Bool {
        try await !postgres.query(
            """
            WITH used AS (\(Self.redeem))
            UPDATE auth.users AS u SET email_verified_at = coalesce(u.email_verified_at, now())
            FROM used WHERE u.id = used.user_id AND lower(u.email) = lower(used.email)
            RETURNING u.id
            """, [hash, Purpose.verify.rawValue]
        ).isEmpty
    }

    /// Marks the reset token `hash` used, on `connection` (within the transaction that sets the
    /// password), and marks the account's email verified: the mail reached its owner. The account,
    /// or nil when the token is not good.
    static func redeemReset(_ hash: [UInt8], on connection: PostgresConnection) async throws -> Int64? {
        try await connection.query(
            """
            WITH used AS (\(redeem))
            UPDATE auth.users AS u SET email_verified_at = coalesce(u.email_verified_at, now())
            FROM used WHERE u.id = used.user_id
            RETURNING u.id
            """, [hash, Purpose.reset.rawValue]
        ).first?.decode(Int64.self, at: 0)
    }

    /// Marks token `$1` of purpose `$2` used when it is good, returning its account and address.
    private static let redeem = """
        UPDATE auth.email_tokens SET used_at = now()
        WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
        RETURNING user_id, email
        """

    /// Deletes tokens that expired a day ago or more.
    func deleteExpired() async throws -> Int {
        try await postgres.query(
            "DELETE FROM auth.email_tokens WHERE expires_at < now() - interval '1 day' RETURNING 1"
        ).count
    }
}

import Foundation
import Logging
import Postgres

/// The mail auth sends, through `auth.mail_outbox`: a statement that asks for a mail writes its row
/// with the rest of its change, and ``deliver()`` (every second) hands what is due to the SMTP
/// server and deletes what it took. A server that cannot be reached is tried again later, waiting
/// twice as long each time up to an hour; a mail it refuses (5xx), or still not taken after
/// ``attemptLimit`` tries, is dropped with a warning.
struct MailQueue: Sendable {
    let postgres: PostgresClient
    /// Nil when `AVIARY_SMTP_URL` is not set: no mail is asked for then.
    let smtp: SMTPClient?
    /// `AVIARY_MAIL_FROM`: who the mail is from.
    let from: String
    let logger: Logger

    static let batch = 20
    static let attemptLimit = 10

    /// Sends the mails that are due, up to ``batch``, over one connection; other instances skip
    /// those rows meanwhile.
    func deliver() async {
        guard let smtp else { return }
        do {
            try await postgres.transaction { connection in
                let rows = try await connection.query(
                    """
                    SELECT id, recipient, subject, body, attempts FROM auth.mail_outbox
                    WHERE next_attempt_at <= now() ORDER BY id LIMIT \(Self.batch) FOR UPDATE SKIP LOCKED
                    """)
                guard !rows.isEmpty else { return }
                let ids = try rows.map { try $0.decode(Int64.self, at: 0) }
                let mails = try rows.map { row in
                    Mail(
                        from: from, to: try row.decode(String.self, at: 1), subject: try row.decode(String.self, at: 2),
                        body: try row.decode(String.self, at: 3))
                }
                var done: [Int64] = []
                var retried: [Int64] = []
                do {
                    for (id, refusal) in zip(ids, try await smtp.send(mails)) {
                        done.append(id)
                        if let refusal { logger.warning("the SMTP server refused a mail; dropped", metadata: ["mail.id": "\(id)", "error": "\(refusal)"]) }
                    }
                } catch {
                    retried = ids
                    logger.warning("sending mail failed; retrying later", metadata: ["mail.count": "\(ids.count)", "error": "\(error)"])
                }
                let abandoned = try await connection.query(
                    """
                    WITH sent AS (DELETE FROM auth.mail_outbox WHERE id = ANY($1)),
                    retried AS (
                        UPDATE auth.mail_outbox SET attempts = attempts + 1,
                            next_attempt_at = now() + least(power(2, attempts), 3600) * interval '1 second'
                        WHERE id = ANY($2) AND attempts + 1 < $3
                    )
                    DELETE FROM auth.mail_outbox WHERE id = ANY($2) AND attempts + 1 >= $3 RETURNING id
                    """, [done, retried, Self.attemptLimit])
                if !abandoned.isEmpty {
                    logger.error("mail not taken after \(Self.attemptLimit) tries; dropped", metadata: ["mail.count": "\(abandoned.count)"])
                }
            }
        } catch {
            logger.warning("reading the mail outbox failed; retrying", metadata: ["error": "\(error)"])
        }
    }
}

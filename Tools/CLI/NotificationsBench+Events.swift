import AviaryAPI
import EventStreams
import Foundation
import Logging
import Postgres
import ServiceKit

extension NotificationsBench {
    /// Event throughput: `count` message events written at once to messaging's outbox, each to a
    /// recipient of its own who is offline (synthetic ids, far above any real one), so that each
    /// makes one notification; timed from the commit until all of them are stored. The whole path
    /// but the call: messaging's relay (which names the offline recipients), the stream, the
    /// notifications consumers and their transactions. What the instances running share is the
    /// figure: one instance, or several (`AVIARY_NOTIFICATIONS_PARTITIONS` cuts each topic so that
    /// they can). The rows are deleted afterwards.
    static func measureEventThroughput(count: Int, configuration: ServiceConfiguration) async throws {
        var options = PostgresConfiguration.Options()
        options.transactionPooling = !configuration.postgresPrepared
        let postgres = try PostgresClient(
            configuration: PostgresConfiguration(url: configuration.postgresURL, options: options), logger: Logger(label: "bench"))
        let base = Int64(8_000_000_000_000_000_000) + Int64.random(in: 0..<1_000_000_000_000)
        let stored = "SELECT count(*) FROM notifications.notifications WHERE recipient_id BETWEEN $1 AND $2"
        let last = base + Int64(count) - 1
        let started = ContinuousClock.now
        _ = try await postgres.query(
            """
            INSERT INTO messaging.outbox (topic, type, payload)
            SELECT \(MessagingTopic.sent.outboxColumns), jsonb_build_object(
                'messageId', ($1 + n)::text, 'conversationId', ($1 + n)::text, 'senderId', ($1 - 1)::text,
                'recipientIds', jsonb_build_array(($1 + n)::text),
                'createdAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
            FROM generate_series(0, $2 - 1) AS n
            """, [base, Int64(count)])
        var done = 0
        while done < count {
            guard ContinuousClock.now - started < .seconds(300) else {
                print("event throughput: \(done) of \(count) notifications stored within 300 s")
                break
            }
            try await Task.sleep(for: .milliseconds(50))
            done = try await postgres.query(stored, [base, last])[0].decode(Int.self, at: 0)
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if done >= count {
            print(String(
                format: "event throughput: %d message events to offline recipients, written to the outbox at once, all stored as notifications in %.2f s: %.0f events/s",
                count, seconds, Double(count) / seconds))
        }
        _ = try await postgres.query("DELETE FROM notifications.notifications WHERE recipient_id BETWEEN $1 AND $2", [base, last])
        await postgres.shutdown()
    }
}

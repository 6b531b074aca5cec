import AviaryAPI
import AviaryJSON
import Foundation
import Postgres

/// A fact another service must hear about (a follow, a like, a new tweet), recorded in the same
/// transaction as the change it describes, so it is never lost and never sent for a change that
/// rolled back. The outbox relay delivers it afterwards.
public struct DomainEvent: Codable, Sendable, Hashable {
    /// The stream it goes to, e.g. `graph`, `tweets`.
    public var topic: String
    /// What happened, e.g. `follow`, `unfollow`.
    public var type: String
    /// The event's data, as the topic documents it.
    public var payload: JSONValue

    public init(topic: String, type: String, payload: JSONValue) {
        self.topic = topic
        self.type = type
        self.payload = payload
    }

    /// An event of `kind` carrying `payload`.
    public init<Payload>(_ kind: EventKind<Payload>, _ payload: Payload) throws {
        self.init(topic: kind.topic, type: kind.type, payload: try RawJSON(encoding: payload).decode(JSONValue.self))
    }

    /// Whether the event is of `kind`.
    public func `is`<Payload>(_ kind: EventKind<Payload>) -> Bool {
        topic == kind.topic && type == kind.type
    }

    /// The payload as `kind`'s type; nil when the event is of another kind. Throws when the payload
    /// does not have the shape `kind` names.
    public func payload<Payload>(_ kind: EventKind<Payload>) throws -> Payload? {
        guard self.is(kind) else { return nil }
        return try RawJSON(encoding: payload).decode(Payload.self)
    }
}

/// The outbox table of a service's schema: appended to inside write transactions.
public enum Outbox {
    /// The migration that creates `<schema>.outbox`; list it among the service's migrations.
    public static func migration(schema: String, version: Int) -> PostgresMigration {
        PostgresMigration(
            version: version, name: "outbox",
            sql: """
                CREATE TABLE \(schema).outbox (
                    id bigserial PRIMARY KEY,
                    topic text NOT NULL,
                    type text NOT NULL,
                    payload jsonb NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                )
                """)
    }

    /// Records `event` in the caller's transaction. The service's ``OutboxRelay`` sends it to the
    /// topic's stream after the commit, within its poll delay; call ``OutboxRelay/nudge()`` after
    /// committing to have it sent at once.
    public static func append(_ event: DomainEvent, schema: String, on connection: PostgresConnection) async throws {
        let payload = String(decoding: try WireEncoding.encode(event.payload), as: UTF8.self)
        try await connection.execute(
            "INSERT INTO \(schema).outbox (topic, type, payload) VALUES ($1, $2, $3::jsonb)", [event.topic, event.type, payload])
    }
}

extension EventKind {
    /// `'<topic>', '<type>'`: the first two columns of an outbox row that a statement writes
    /// itself (`INSERT INTO <schema>.outbox (topic, type, payload) SELECT <these>, <payload> …`).
    public var outboxColumns: String { "'\(topic)', '\(type)'" }
}

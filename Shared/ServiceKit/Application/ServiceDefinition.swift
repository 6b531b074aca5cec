import Foundation
import Postgres
import RPC

/// What makes one executable the service it is: its name, its tables, and its methods.
/// Everything else (configuration, storage clients, servers, lifecycle) the runtime supplies.
public struct ServiceDefinition: Sendable {
    public var name: ServiceName
    /// Forward-only migrations of the service's own schema (named after the service).
    public var migrations: [PostgresMigration]
    /// Builds the service: registers its methods, and adds what else it runs (its event consumers,
    /// ``ServiceResources/consume(_:)``, background jobs, admin routes); called once at start-up,
    /// after migrations ran.
    public var register: @Sendable (_ router: inout RPCRouter, _ resources: ServiceResources) async throws -> Void
    /// The schema whose `outbox` table (``EventStreams/Outbox``) an ``EventStreams/OutboxRelay``
    /// empties into Redis streams; nil for a service that produces no events.
    public var outboxSchema: String?

    public init(
        name: ServiceName, migrations: [PostgresMigration] = [], outboxSchema: String? = nil,
        register: @escaping @Sendable (_ router: inout RPCRouter, _ resources: ServiceResources) async throws -> Void = { _, _ in }
    ) {
        self.name = name
        self.migrations = migrations
        self.outboxSchema = outboxSchema
        self.register = register
    }

    /// The Postgres schema the service owns: its name with `-` as `_` (`social_graph`).
    public var schema: String { name.rawValue.replacingOccurrences(of: "-", with: "_") }
}

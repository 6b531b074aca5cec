import Foundation
import Logging
import RPC
import ServiceKit

/// The connections of one WebSocket to the services it subscribed on: one per service, made on
/// the first subscription, whose pushed events go to the socket as they come. Closing them (when
/// the socket closes) ends every subscription at once: the services drop a connection's
/// subscriptions when it closes.
actor LiveLinks {
    private var connections: [ServiceName: RPCClientConnection] = [:]
    private var pumps: [Task<Void, Never>] = []
    private var closed = false
    private let resources: ServiceResources
    private let deliver: @Sendable (Data) async -> Void
    private let lost: @Sendable (ServiceName) async -> Void

    /// - Parameters:
    ///   - deliver: writes one pushed notification frame to the socket.
    ///   - lost: told when a service's connection closed on its own (the instance went away), and
    ///     its subscriptions with it.
    init(
        resources: ServiceResources, deliver: @escaping @Sendable (Data) async -> Void,
        lost: @escaping @Sendable (ServiceName) async -> Void
    ) {
        self.resources = resources
        self.deliver = deliver
        self.lost = lost
    }

    func connection(to service: ServiceName) async throws(RPCError) -> RPCClientConnection {
        guard !closed else { throw .unavailable("the socket is closing") }
        if let existing = connections[service], existing.isActive { return existing }
        let connection = try await resources.client(for: service).dedicatedConnection()
        if closed {
            await connection.close()
            throw .unavailable("the socket is closing")
        }
        connections[service] = connection
        let (deliver, lost) = (self.deliver, self.lost)
        pumps.append(
            Task {
                for await notification in connection.notifications {
                    await deliver(RPCRelay.notification(method: notification.method, params: notification.params))
                }
                if !self.closed { await lost(service) }
            })
        return connection
    }

    /// Closes every connection (ending the subscriptions on it) and stops delivering.
    func close() async {
        closed = true
        for connection in connections.values { await connection.close() }
        connections = [:]
        for pump in pumps { pump.cancel() }
        pumps = []
    }
}

import RPC

/// A service built in this process by ``ServiceApplication/prepare(_:configuration:logger:started:)``:
/// its router, with every method registered, and the resources its handlers use.
public struct PreparedService: Sendable {
    public let router: RPCRouter
    public let resources: ServiceResources
    /// The node id's lease, when the id is leased.
    let lease: NodeLease?

    /// Releases what the service holds: its node id, its storage clients and its peers' clients.
    /// For a service that is not run; ``ServiceApplication/run(_:configuration:registry:logger:)``
    /// releases what it serves itself.
    public func shutdown() async {
        await lease?.release()
        await resources.shutdown()
    }
}

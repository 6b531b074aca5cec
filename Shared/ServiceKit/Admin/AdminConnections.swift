import NIOCore
import Synchronization

/// The open connections of an ``AdminHTTPServer``, so that graceful shutdown can reach them from
/// the synchronous shutdown handler.
final class AdminConnections: Sendable {
    private struct State {
        var isQuiescing = false
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    private let state = Mutex(State())

    var isQuiescing: Bool {
        self.state.withLock { $0.isQuiescing }
    }

    /// Tracks a new connection; false when shutdown has begun and it should be closed instead.
    func register(_ channel: any Channel) -> Bool {
        self.state.withLock { state in
            guard !state.isQuiescing else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func remove(_ channel: any Channel) {
        _ = self.state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// How long a connection still busy at shutdown may take before it is closed: admin requests
    /// are probes and scrapes, and one whose body never ends (or trickles in) must not hold up the
    /// shutdown of the process, whose RPC server stops after this one.
    static let quiesceGrace: TimeAmount = .seconds(2)

    /// Stops accepting and asks every connection to quiesce: NIO's HTTP pipeline handler closes an
    /// idle one at once and a busy one after its current response, or ``quiesceGrace`` closes it.
    func quiesce(serverChannel: any Channel) {
        let channels = self.state.withLock { state in
            state.isQuiescing = true
            return Array(state.channels.values)
        }
        serverChannel.close(promise: nil)
        for channel in channels {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            channel.eventLoop.scheduleTask(in: Self.quiesceGrace) { channel.close(promise: nil) }
        }
    }
}

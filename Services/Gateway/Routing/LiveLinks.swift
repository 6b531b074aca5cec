import AviaryJSON
import Foundation
import RPC
import ServiceKit
import Synchronization

/// One WebSocket's subscriptions: opened and ended through the services' shared ``LiveChannel``s,
/// their events queued on the socket, all ended when the socket closes.
final class LiveLinks: Sendable {
    private static let serials = Atomic<UInt64>(1)

    let socket = LiveLinks.serials.wrappingAdd(1, ordering: .relaxed).oldValue
    private let channels: LiveChannels
    private let deliver: @Sendable (Data) -> Void
    private let lost: @Sendable (ServiceName) -> Void
    /// The services this socket subscribed on.
    private let subscribed = Mutex<Set<ServiceName>>([])

    /// - Parameters:
    ///   - deliver: queues one pushed frame on the socket.
    ///   - lost: told when a subscription's service connection closed (the socket should reconnect).
    init(
        channels: LiveChannels, deliver: @escaping @Sendable (Data) -> Void, lost: @escaping @Sendable (ServiceName) -> Void
    ) {
        self.channels = channels
        self.deliver = deliver
        self.lost = lost
    }

    /// Answers the subscription call `method` (`<service>.subscribe` or `.unsubscribe`).
    func call(_ service: ServiceName, _ method: String, params: RawJSON, meta: RequestMeta) async -> Result<RawJSON, RPCError> {
        let channel = channels.channel(for: service)
        if method.hasSuffix(".unsubscribe") {
            guard let name = JSONSplice.stringMember("subscription", of: params.bytes[...]) else {
                return .failure(.invalidParams("missing parameter 'subscription'", field: "subscription"))
            }
            return await channel.unsubscribe(method, name: name, meta: meta, socket: socket)
        }
        subscribed.withLock { _ = $0.insert(service) }
        return await channel.subscribe(
            method, params: params, meta: meta, route: LiveChannel.Route(socket: socket, deliver: deliver, lost: lost))
    }

    /// Ends every subscription of the socket; `meta` is what each unsubscribe call carries.
    func close(meta: RequestMeta) async {
        for service in subscribed.withLock({ $0 }) {
            await channels.channel(for: service).drop(socket: socket, meta: meta)
        }
    }
}

/// The gateway's ``LiveChannel`` of each service, made on first use.
final class LiveChannels: Sendable {
    private let channels = Mutex<[ServiceName: LiveChannel]>([:])
    private let resources: ServiceResources

    init(resources: ServiceResources) {
        self.resources = resources
    }

    func channel(for service: ServiceName) -> LiveChannel {
        channels.withLock { channels in
            if let channel = channels[service] { return channel }
            let channel = LiveChannel(service: service, resources: resources)
            channels[service] = channel
            return channel
        }
    }
}

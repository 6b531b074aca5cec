import AviaryJSON
import Foundation
import Locking
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
    private let subscribed = Locked<Set<ServiceName>>([])

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
        var deliver = deliver
        if let held = Self.answering {
            held.opened()
            deliver = { [deliver] frame in held.pass(frame, to: deliver) }
        }
        return await channel.subscribe(
            method, params: params, meta: meta, route: LiveChannel.Route(socket: socket, deliver: deliver, lost: lost))
    }

    /// The answer `respond` makes to one message of the socket. A client learns a subscription's
    /// name from the answer, and could not place its events before it, while the service pushes a
    /// catch-up right behind its answer: so the events of the subscriptions the message opens wait
    /// until its answer is queued. When it opened any, the answer is queued here, then their events,
    /// and nil is returned; otherwise the answer is returned for the caller to queue.
    func answer(_ respond: () async -> Data?) async -> Data? {
        let held = HeldEvents()
        let answer = await Self.$answering.withValue(held) { await respond() }
        guard held.isOpening else { return answer }
        held.release(after: answer, to: deliver)
        return nil
    }

    /// Set while a socket's message is answered (``answer(_:)``); unset for the Mastodon streams,
    /// which send no answers.
    @TaskLocal private static var answering: HeldEvents?

    /// The events of the subscriptions one message opens, held until its answer is queued.
    private final class HeldEvents: Sendable {
        private struct State {
            var opening = false
            /// Nil once released.
            var held: [Data]? = []
        }

        private let state = Locked(State())

        var isOpening: Bool { state.withLock { $0.opening } }

        func opened() {
            state.withLock { $0.opening = true }
        }

        /// Queues `frame` with `deliver` once released; holds it until then.
        func pass(_ frame: Data, to deliver: (Data) -> Void) {
            state.withLock { state in
                if state.held == nil { deliver(frame) } else { state.held?.append(frame) }
            }
        }

        /// Queues `answer`, then what was held, and lets later events straight through.
        func release(after answer: Data?, to deliver: (Data) -> Void) {
            state.withLock { state in
                if let answer { deliver(answer) }
                for frame in state.held ?? [] { deliver(frame) }
                state.held = nil
            }
        }
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
    private let channels = Locked<[ServiceName: LiveChannel]>([:])
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

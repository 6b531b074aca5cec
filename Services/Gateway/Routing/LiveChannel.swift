import AviaryJSON
import Foundation
import Logging
import RPC
import ServiceKit
import Synchronization

/// Where one service's subscriptions of every socket of this gateway run: a few connections to the
/// service, shared (the service keeps each subscription's user and checks its session), each
/// read by a pump that hands every pushed event to the socket whose subscription it is.
///
/// A subscription is known to its socket as `<link>-<id>`: the service numbers subscriptions per
/// connection, so the link's serial (numbered across every service's channel) makes the name unique
/// on this gateway. Events that arrive
/// before their subscription's answer was seen (a catch-up pushed at once) are kept until it is,
/// so that a socket sees its events in the order the service sent them, after the answer
/// (``LiveLinks/answer(_:)``).
actor LiveChannel {
    /// Connections kept to the service: subscriptions are spread over them.
    static let width = 2
    /// Events kept for a subscription whose answer has not been seen yet.
    static let earlyLimit = 1024

    /// One subscription's socket: ``deliver`` queues a frame on it (in order, without waiting);
    /// ``lost`` is told when the connection the subscription ran on closed.
    struct Route: Sendable {
        let socket: UInt64
        let deliver: @Sendable (Data) -> Void
        let lost: @Sendable (ServiceName) -> Void
    }

    private struct Link {
        let connection: RPCClientConnection
        var subscriptions = 0
    }

    /// Numbers the links of every service's channel: a socket's subscriptions on two services must
    /// not share a name (an app routes events by it).
    private static let serials = Atomic<Int>(1)

    let service: ServiceName
    private let resources: ServiceResources
    private var links: [Int: Link] = [:]
    /// By the socket's name of the subscription (`<link>-<id>`).
    private var routes: [String: Route] = [:]
    private var early: [String: [Data]] = [:]
    /// `<service>.unsubscribe`, named after the subscribe call that opened the routes.
    private var unsubscribeMethod: String?

    init(service: ServiceName, resources: ServiceResources) {
        self.service = service
        self.resources = resources
    }

    /// Sends the subscribe call `method` on one of the links and, when it opens a subscription,
    /// routes its events to `route`; the answer names the subscription as the socket must.
    func subscribe(_ method: String, params: RawJSON, meta: RequestMeta, route: Route) async -> Result<RawJSON, RPCError> {
        unsubscribeMethod = String(method.dropLast("subscribe".count)) + "unsubscribe"
        let serial: Int
        let connection: RPCClientConnection
        do {
            (serial, connection) = try await link()
        } catch {
            return .failure(error)
        }
        let answer: RawJSON
        switch await Forwarder.answer(of: service, {
            try await connection.send(method, params: params, meta: meta, timeout: GatewaySettings.callTimeout)
        }) {
        case .success(let raw): answer = raw
        case .failure(let error): return .failure(error)
        }
        guard let id = JSONSplice.stringMember("subscription", of: answer.bytes[...]) else { return .success(answer) }
        let name = "\(serial)-\(id)"
        guard links[serial] != nil else {
            // The link closed while the call was answered: its subscriptions ended with it.
            return .failure(.unavailable("the \(service) service's connection closed; subscribe again"))
        }
        links[serial]?.subscriptions += 1
        routes[name] = route
        for frame in early.removeValue(forKey: name) ?? [] { route.deliver(frame) }
        let renamed = JSONSplice.rewritingMembers(of: answer.bytes) { key, value in
            key == "subscription" ? Self.quoted(name) : Array(value)
        }
        return .success(renamed.map(RawJSON.init(unchecked:)) ?? answer)
    }

    /// Ends the socket's subscription `name` (sent as the unsubscribe call `method`).
    func unsubscribe(_ method: String, name: String, meta: RequestMeta, socket: UInt64) async -> Result<RawJSON, RPCError> {
        guard let route = routes[name], route.socket == socket, let (serial, id) = Self.split(name),
            let connection = links[serial]?.connection
        else {
            return .failure(.notFound("no subscription \(name.prefix(40)) is open on this socket"))
        }
        remove(name, serial: serial)
        return await Forwarder.answer(of: service) {
            try await connection.send(
                method, params: try RawJSON(encoding: ["subscription": id]), meta: meta, timeout: GatewaySettings.callTimeout)
        }
    }

    /// Ends every subscription of `socket` (it closed), telling the service without waiting; the
    /// unsubscribe calls carry `meta` (the socket's token).
    func drop(socket: UInt64, meta: RequestMeta) {
        guard let method = unsubscribeMethod else { return }
        for (name, route) in routes where route.socket == socket {
            guard let (serial, id) = Self.split(name), let connection = links[serial]?.connection else { continue }
            remove(name, serial: serial)
            let params = (try? RawJSON(encoding: ["subscription": id])) ?? .emptyObject
            Task { _ = try? await connection.send(method, params: params, meta: meta, timeout: GatewaySettings.callTimeout) }
        }
    }

    private func remove(_ name: String, serial: Int) {
        routes[name] = nil
        early[name] = nil
        links[serial]?.subscriptions -= 1
    }

    /// A pushed event of link `serial`: to its socket, or kept until the subscription is known.
    private func received(_ notification: RPCNotification, on serial: Int) {
        guard let id = JSONSplice.stringMember("subscription", of: notification.params.bytes[...]) else { return }
        let name = "\(serial)-\(id)"
        guard let params = JSONSplice.rewritingMembers(of: notification.params.bytes, { key, value in
            key == "subscription" ? Self.quoted(name) : Array(value)
        }) else { return }
        let frame = RPCRelay.notification(method: notification.method, params: RawJSON(unchecked: params))
        if let route = routes[name] {
            route.deliver(frame)
        } else if early[name, default: []].count < Self.earlyLimit {
            early[name, default: []].append(frame)
        }
    }

    /// Link `serial` closed: its subscriptions ended with it, and their sockets are told.
    private func ended(_ serial: Int) {
        links[serial] = nil
        let prefix = "\(serial)-"
        for (name, route) in routes where name.hasPrefix(prefix) {
            routes[name] = nil
            route.lost(service)
        }
        early = early.filter { !$0.key.hasPrefix(prefix) }
    }

    /// The link with the fewest subscriptions, opening one while there are fewer than ``width``.
    private func link() async throws(RPCError) -> (Int, RPCClientConnection) {
        let open = links.filter { $0.value.connection.isActive }
        if open.count >= Self.width, let least = open.min(by: { $0.value.subscriptions < $1.value.subscriptions }) {
            return (least.key, least.value.connection)
        }
        let connection = try await resources.client(for: service).dedicatedConnection()
        let serial = Self.serials.wrappingAdd(1, ordering: .relaxed).oldValue
        links[serial] = Link(connection: connection)
        Task {
            for await notification in connection.notifications { self.received(notification, on: serial) }
            self.ended(serial)
        }
        return (serial, connection)
    }

    private static func split(_ name: String) -> (Int, String)? {
        guard let dash = name.firstIndex(of: "-"), let serial = Int(name[..<dash]) else { return nil }
        return (serial, String(name[name.index(after: dash)...]))
    }

    private static func quoted(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONText.appendString(text, to: &bytes)
        return bytes
    }
}

import ArgumentParser
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit

/// `aviary bench messaging`: messaging.send throughput, and how soon the subscribed peer gets each message.
struct MessagingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging",
        abstract: "messaging.send in 2-member conversations with the peer subscribed (target ≥ 3,000 messages/s, delivery p99 < 20 ms).",
        discussion: """
            Runs against running auth and messaging services. Registers 2 × --pairs users through auth.register
            (raise AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR on a test stack), opens a direct conversation per pair and
            subscribes each pair's receiver on its own connection. --clients senders then share the pairs; every
            message carries its send time, and the receiver's side records the time from the start of the send call
            to the arrival of its event. A paced run at --paced-rate follows, for the delivery time without the
            closed loop's queueing. The messages stay in the database: run it against a test stack.
            """)

    @Option(help: "host:port of the messaging service (default: AVIARY_MESSAGING_ADDRESSES or its default port).")
    var address: String?

    @Option(help: "host:port of the auth service, to register the users (default: AVIARY_AUTH_ADDRESSES or its default port).")
    var authAddress: String?

    @Option(help: "Conversations (two users each).")
    var pairs = 16

    @Option(help: "Concurrent senders, spread over the pairs (one connection each).")
    var clients = 32

    @Option(help: "Seconds of sending (at most 25).")
    var seconds = 10

    @Option(help: "Messages a second of the paced run that follows the closed-loop one.")
    var pacedRate = 1000

    func validate() throws {
        try validateRate(pacedRate, option: "--paced-rate")
    }

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .messaging)
        let messagingAddress = address ?? configuration.addresses(of: .messaging)[0]
        let logger = Logger(label: "bench")
        var clientConfiguration = RPCClient.Configuration(addresses: [messagingAddress])
        clientConfiguration.connectionsPerAddress = clients
        let messaging = RPCClient(configuration: clientConfiguration, logger: logger)
        let auth = RPCClient(
            configuration: .init(addresses: [authAddress ?? configuration.addresses(of: .auth)[0]]), logger: logger)
        defer {
            Task {
                await messaging.shutdown()
                await auth.shutdown()
            }
        }
        let setup = try await Setup.make(pairs: max(1, pairs), auth: auth, messaging: messaging, address: messagingAddress)
        print("\(setup.conversations.count) conversations, receivers subscribed; sending for \(min(seconds, 25)) s with \(clients) clients")

        let started = ContinuousClock.now
        // Each message's text is the time it was sent (or due to be), in nanoseconds since `started`,
        // for the receiver. An error answer is a failed send, not a message sent.
        @Sendable func send(_ sender: Int, at sentAt: Duration) async throws {
            let pair = setup.conversations[sender % setup.conversations.count]
            let text = String(sentAt.components.seconds * 1_000_000_000 + sentAt.components.attoseconds / 1_000_000_000)
            // Digits only on both sides, so written directly rather than through JSONEncoder.
            let params = RawJSON(unchecked: Array(#"{"conversationId":"\#(pair.conversation)","text":"\#(text)"}"#.utf8))
            _ = try await messaging.send("messaging.send", params: params, meta: RequestMeta(token: pair.senderToken)).result()
        }
        let statements = BenchStatements()
        defer { Task { await statements.close() } }
        let before = try? await statements.total()
        let sends = try await runLoad(workers: clients, duration: .seconds(min(seconds, 25))) { sender in
            try await send(sender, at: ContinuousClock.now - started)
        }
        let statementsLine = await statements.perCall(since: before, calls: sends.calls)
        // Let the last events arrive.
        try await Task.sleep(for: .milliseconds(500))
        let delivered = setup.receivers.flatMap { $0.takeLatencies(since: started) }
        print("messaging.send, \(clients) clients, \(setup.conversations.count) conversations:  \(sends.summary)   (target ≥ 3,000 messages/s)")
        print(statementsLine)
        Self.printDelivery(delivered, of: sends, "under that load (a send waits its turn among \(clients))")

        // The same path at a pace the service keeps up with: the latency without the queueing, each
        // delivery timed from when its send was due (runAtRate starts 1 ms from now, evenly spaced).
        let pacedStart = ContinuousClock.now - started + .milliseconds(1)
        let interval = Duration.nanoseconds(1_000_000_000 / pacedRate)
        let paced = try await runAtRate(pacedRate, for: .seconds(min(seconds, 25))) { call in
            try await send(call, at: pacedStart + interval * call)
        }
        try await Task.sleep(for: .milliseconds(500))
        let pacedDelivery = setup.receivers.flatMap { $0.takeLatencies(since: started) }
        for receiver in setup.receivers { await receiver.close() }
        print("messaging.send paced at \(pacedRate)/s:  \(paced.summary)")
        Self.printDelivery(pacedDelivery, of: paced, "at \(pacedRate)/s")
    }

    /// The delivery times of the messages `sends` sent; a message sent but never delivered counts as
    /// the calls' timeout, and is printed as undelivered.
    private static func printDelivery(_ latencies: [Duration], of sends: LoadFigures, _ condition: String) {
        let undelivered = max(0, sends.calls - latencies.count)
        let delivery = LoadFigures(
            calls: sends.calls, seconds: sends.seconds, latencies: latencies + Array(repeating: BenchSocket.callTimeout, count: undelivered))
        print(
            "delivery to the subscribed peer \(condition): \(latencies.count) of \(sends.calls) messages, \(undelivered) undelivered"
                + String(format: "  p50 %.2f ms  p99 %.2f ms", delivery.percentile(0.50), delivery.percentile(0.99))
                + "   (target p99 < 20 ms; from the send's start, or when it was due, to the event's arrival)")
    }
}

/// The conversations of a run, each with its sender's token and its receiver's subscription.
private struct Setup {
    struct Pair: Sendable {
        var conversation: String
        var senderToken: String
    }

    var conversations: [Pair]
    var receivers: [Receiver]

    static func make(pairs: Int, auth: RPCClient, messaging: RPCClient, address: String) async throws -> Setup {
        let run = String(UInt32.random(in: .min ... .max), radix: 36)
        var conversations: [Pair] = []
        var receivers: [Receiver] = []
        for index in 0..<pairs {
            let sender = try await register("bs\(run)_\(index)", auth: auth)
            let receiver = try await register("br\(run)_\(index)", auth: auth)
            struct Opened: Decodable { var id: String }
            let opened = try await messaging.call(
                "messaging.openDirect", params: ["userId": receiver.id], meta: RequestMeta(token: sender.token), as: Opened.self)
            conversations.append(Pair(conversation: opened.id, senderToken: sender.token))
            receivers.append(try await Receiver.subscribe(address: address, token: receiver.token))
        }
        return Setup(conversations: conversations, receivers: receivers)
    }

    private static func register(_ username: String, auth: RPCClient) async throws -> (id: String, token: String) {
        struct Registered: Decodable {
            struct Account: Decodable { var id: String }
            var user: Account
            var accessToken: String
        }
        do {
            let registered = try await auth.call(
                "auth.register",
                params: [
                    "email": "\(username)@bench.invalid", "password": "bench-\(UUID().uuidString)", "username": username,
                    "fullname": "Bench \(username)",
                ], as: Registered.self)
            return (registered.user.id, registered.accessToken)
        } catch let error as RPCError where error.reason == "rate_limited" {
            throw ValidationError(
                "auth refused to register more users (\(error.message)); run against a stack with AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR raised")
        }
    }
}

/// A subscribed receiver: reads its connection's events and keeps, per message, when it arrived
/// relative to the send time the message carries.
private final class Receiver: Sendable {
    private let connection: RPCClientConnection
    private let arrivals: Arrivals
    private let reader: Task<Void, Never>

    /// Each message's send time (nanoseconds into the run) and arrival, shared with the reading task.
    private final class Arrivals: Sendable {
        let times = Locked<[(sent: Int64, arrived: ContinuousClock.Instant)]>([])
    }

    private init(connection: RPCClientConnection) {
        self.connection = connection
        let arrivals = Arrivals()
        self.arrivals = arrivals
        // On the connection's loop, as the services' own tasks run: a task on Swift's global pool
        // would take a thread hop per event, and the arrival time would include it.
        reader = Task(executorPreference: EventLoopTaskExecutor(eventLoop: connection.eventLoop)) {
            struct Params: Decodable {
                struct Event: Decodable {
                    struct Body: Decodable { var text: String? }
                    var type: String
                    var message: Body?
                }
                var event: Event
            }
            for await notification in connection.notifications {
                let arrived = ContinuousClock.now
                guard let params = try? notification.params.decode(Params.self), params.event.type == "message",
                    let sent = params.event.message?.text.flatMap({ Int64($0) })
                else { continue }
                arrivals.times.withLock { $0.append((sent, arrived)) }
            }
        }
    }

    static func subscribe(address: String, token: String) async throws -> Receiver {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw ValidationError("--address must be host:port") }
        let connection = try await RPCClientConnection.connect(host: String(parts[0]), port: port)
        _ = try await connection.call("messaging.subscribe", meta: RequestMeta(token: token), as: JSONValue.self)
        return Receiver(connection: connection)
    }

    /// The delivery time of each message that arrived since the last call, with send times counted
    /// from `start`.
    func takeLatencies(since start: ContinuousClock.Instant) -> [Duration] {
        arrivals.times.withLock { arrivals in
            defer { arrivals.removeAll() }
            return arrivals.map { start.duration(to: $0.arrived) - .nanoseconds($0.sent) }
        }
    }

    func close() async {
        reader.cancel()
        await connection.close()
    }
}

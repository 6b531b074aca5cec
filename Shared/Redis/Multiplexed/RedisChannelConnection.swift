import ChannelSupport
import NIOCore
import NIOPosix
import Synchronization

/// A non-blocking Redis connection on a NIO event loop, safe to use from many tasks at once (see
/// ``RedisChannelHandler``). `RedisClient` shares these between callers; blocking commands get one
/// of their own.
final class RedisChannelConnection: Sendable {
    private let channel: any Channel
    private let commandsInFlight = Atomic<Int>(0)
    /// Set while requests written on the event loop in this tick have yet to leave (the flush comes
    /// at the end of the tick, ``FlushCoalescingHandler``).
    private let gathering = Atomic<Bool>(false)

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Connects and sends the configuration's `AUTH` and `SELECT`; for a Sentinel set, to the master
    /// the sentinels name (``SentinelLookup``).
    ///
    /// - Throws: `RedisError` — `.connectionFailed`, `.timeout`, or `.serverError` when `AUTH` or
    ///   `SELECT` is refused.
    static func connect(
        _ configuration: RedisConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(RedisError) -> RedisChannelConnection {
        guard case .sentinel(let sentinels, let master) = configuration.deployment else {
            return try await connect(server: configuration, group: group)
        }
        var failures: [String] = []
        for sentinel in sentinels {
            do {
                let asked = try await connect(server: SentinelLookup.sentinel(sentinel, of: configuration), group: group)
                defer { asked.close() }
                guard let address = SentinelLookup.address(in: try await asked.send([SentinelLookup.addressQuery(master)])[0]) else {
                    failures.append("\(sentinel) does not know it")
                    continue
                }
                let connection = try await connect(server: configuration.server(at: address), group: group)
                guard SentinelLookup.isMaster(try await connection.send([["ROLE"]])[0]) else {
                    connection.close()
                    failures.append("\(sentinel) named \(address), which is not a master")
                    continue
                }
                return connection
            } catch let failure as RedisConnectionFailure {
                failures.append("\(sentinel): \(String(reflecting: failure.error))")
            } catch {
                failures.append("\(sentinel): \(String(reflecting: error))")
            }
        }
        throw SentinelLookup.notFound(master, failures)
    }

    private static func connect(
        server configuration: RedisConfiguration, group: any EventLoopGroup
    ) async throws(RedisError) -> RedisChannelConnection {
        let commandTimeout = TimeAmount(configuration.commandTimeout)
        let channel: any Channel
        do {
            let bootstrap = ClientBootstrap(group: group)
                .connectTimeout(TimeAmount(configuration.connectTimeout))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            FlushCoalescingHandler(), RedisChannelHandler(commandTimeout: commandTimeout),
                        ])
                    }
                }
            if let socketPath = configuration.socketPath {
                channel = try await bootstrap.connect(unixDomainSocketPath: socketPath).get()
            } else {
                channel = try await bootstrap
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelOption(.socketOption(.so_keepalive), value: 1)
                    .connect(host: configuration.host, port: configuration.port).get()
            }
        } catch {
            throw RedisError(.connectionFailed, detail: "connecting failed: \(error)")
        }
        let connection = RedisChannelConnection(channel: channel)
        let handshake = configuration.handshakeCommands
        guard !handshake.isEmpty else { return connection }
        do {
            for case .error(let message) in try await connection.send(handshake) {
                connection.close()
                throw RedisError(.serverError, serverMessage: message, detail: "AUTH or SELECT was refused")
            }
        } catch let failure as RedisConnectionFailure {
            connection.close()
            throw RedisError(failure.error.code, detail: "handshake failed: \(String(reflecting: failure.error))")
        } catch let error as RedisError {
            throw error
        } catch {
            connection.close()
            throw RedisError(.connectionFailed, detail: "handshake failed: \(error)")
        }
        return connection
    }

    /// Whether the socket is still open (the server may have closed it since).
    var isActive: Bool { channel.isActive }

    /// Sends the commands as one pipeline and returns one reply per command, error replies in place.
    ///
    /// - Throws: ``RedisConnectionFailure`` when the connection breaks, times out or is closed.
    func send(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        commandsInFlight.add(commands.count, ordering: .relaxed)
        defer { commandsInFlight.subtract(commands.count, ordering: .relaxed) }
        let promise = channel.eventLoop.makePromise(of: [RESPValue].self)
        // Once the channel has closed, NIO has removed the handler, and the request would reach no
        // one: failing its write is then the only news of it. A request the handler took and could
        // not write fails the same way: one command cut short never ran, a pipeline's first may have.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in
            promise.fail(
                RedisConnectionFailure(
                    error: RedisError(.connectionFailed, detail: "the connection is closed"),
                    requestMayHaveArrived: commands.count > 1))
        }
        channel.writeAndFlush(RedisRequest(commands: commands, promise: promise), promise: written)
        // Queued after the flush that write scheduled, so it runs once the batch has left.
        if channel.eventLoop.inEventLoop, !gathering.exchange(true, ordering: .relaxed) {
            channel.eventLoop.execute { self.gathering.store(false, ordering: .relaxed) }
        }
        return try await promise.futureResult.get()
    }

    /// Whether a request sent now from the connection's event loop leaves in the same `write(2)` as
    /// requests already written in this tick.
    var isGathering: Bool { gathering.load(ordering: .relaxed) }

    /// How many commands are waiting for their replies.
    var load: Int { commandsInFlight.load(ordering: .relaxed) }

    /// Closes the connection once the requests in flight have their replies.
    func closeWhenIdle() {
        channel.triggerUserOutboundEvent(RedisCloseWhenIdle(), promise: nil)
    }

    /// Closes the connection now; requests in flight fail with `.connectionFailed`.
    func close() {
        channel.close(promise: nil)
    }

    /// Completes when the connection has closed.
    var closed: EventLoopFuture<Void> { channel.closeFuture }
}

import ChannelSupport
import Locking
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// A JSON-RPC server over TCP: newline-delimited frames, answered by a router. It is a `Service`:
/// `run()` listens until graceful shutdown, then stops accepting, lets every connection finish
/// its calls in flight, closes idle connections at once, and returns.
public final class RPCServer: Service, Sendable {
    /// Server options; every default is the contract's.
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port; read it from `localAddress()`.
        public var port: Int
        /// Longest accepted frame (contract §1: 1 MiB by default).
        public var maxFrameBytes: Int
        /// Calls one connection may have running before the server stops reading from it.
        public var maxInFlightPerConnection: Int
        /// How long a graceful shutdown waits for calls in flight before it stops waiting; the
        /// connections still open then close when the process exits. systemd's `TimeoutStopSec` and
        /// Kubernetes' grace period are set above it.
        public var drainTimeout: Duration
        /// How long one frame may take to arrive, from its first byte to its newline, before the
        /// connection is closed (``NewlineFrameDecoder``); idle time between frames is not limited.
        public var frameTimeout: Duration

        public init(
            host: String = "127.0.0.1", port: Int, maxFrameBytes: Int = 1 << 20, maxInFlightPerConnection: Int = 1024,
            drainTimeout: Duration = .seconds(10), frameTimeout: Duration = .seconds(60)
        ) {
            self.host = host
            self.port = port
            self.maxFrameBytes = maxFrameBytes
            self.maxInFlightPerConnection = maxInFlightPerConnection
            self.drainTimeout = drainTimeout
            self.frameTimeout = frameTimeout
        }
    }

    private let router: RPCRouter
    private let configuration: Configuration
    private let connections: ConnectionLimit
    private let group: any EventLoopGroup
    private let logger: Logger
    private let bound = Locked<BoundState>(.waiting([]))

    private enum BoundState {
        case waiting([CheckedContinuation<SocketAddress, any Error>])
        case bound(SocketAddress)
        case failed(any Error)
    }

    /// - Parameter connections: the client connections held at once, which the process's other
    ///   listeners may share; one more is answered an `unavailable` error and closed.
    public init(
        router: RPCRouter, configuration: Configuration,
        connections: ConnectionLimit = ConnectionLimit(limit: ConnectionLimit.defaultLimit),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) {
        self.router = router
        self.configuration = configuration
        self.connections = connections
        self.group = group
        self.logger = logger
    }

    /// The address the server listens on, once it does.
    public func localAddress() async throws -> SocketAddress {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<SocketAddress, any Error>? = bound.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .bound(let address): return .success(address)
                case .failed(let error): return .failure(error)
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// The port the server listens on, once it does.
    public func listeningPort() async throws -> Int {
        try await localAddress().port ?? configuration.port
    }

    public func run() async throws {
        let quiesce = ServerQuiescingHelper(group: group)
        let router = self.router
        let configuration = self.configuration
        let connections = self.connections
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 1024)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                    }
                }
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelOption(.maxMessagesPerRead, value: 16)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard connections.admit(channel) else {
                            try channel.pipeline.syncOperations.addHandler(RefusingHandler.jsonRPC(connections.refusal))
                            return
                        }
                        try channel.pipeline.syncOperations.addHandlers([
                            FlushCoalescingHandler(),
                            ByteToMessageHandler(
                                NewlineFrameDecoder(
                                    maxFrameBytes: configuration.maxFrameBytes, frameTimeout: TimeAmount(configuration.frameTimeout))),
                            RPCServerHandler(router: router, maxInFlight: configuration.maxInFlightPerConnection),
                        ])
                    }
                }
                .bind(host: configuration.host, port: configuration.port).get()
        } catch {
            resolveBound(.failure(error))
            throw error
        }
        let address = channel.localAddress!
        resolveBound(.success(address))
        logger.debug("JSON-RPC server listening", metadata: ["address": "\(address)"])

        // Wait for graceful shutdown (or cancellation), then drain.
        try? await gracefulShutdown()
        let drained = group.next().makePromise(of: Void.self)
        quiesce.initiateShutdown(promise: drained)
        let drainTimeout = configuration.drainTimeout
        let loop = group.next()
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiting = Locked<CheckedContinuation<Bool, Never>?>(continuation)
            let resume: @Sendable (Bool) -> Void = { value in waiting.withLock { $0.take() }?.resume(returning: value) }
            let timer = loop.scheduleTask(in: TimeAmount(drainTimeout)) { resume(false) }
            drained.futureResult.whenComplete { _ in
                timer.cancel()
                resume(true)
            }
        }
        if finished {
            logger.debug("JSON-RPC server drained")
        } else {
            logger.warning(
                "JSON-RPC calls still running when the drain timeout ran out; their connections close as the process exits",
                metadata: ["drain.timeout": "\(drainTimeout)"])
        }
    }

    private func resolveBound(_ result: Result<SocketAddress, any Error>) {
        let waiters = bound.withLock { state -> [CheckedContinuation<SocketAddress, any Error>] in
            guard case .waiting(let waiters) = state else { return [] }
            switch result {
            case .success(let address): state = .bound(address)
            case .failure(let error): state = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}

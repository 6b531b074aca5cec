import Metrics
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The client connections a process holds at once, on every listener that shares it, up to a
/// limit: one more is refused (each listener tells it why in its own protocol, then closes it), so
/// that clients cannot take every file descriptor the process has. Its Postgres, Redis and peer
/// connections need some too, and a process out of descriptors spins: the listening socket stays
/// readable while every accept fails (EMFILE), and SwiftNIO keeps it registered,
/// `AcceptBackoffHandler` or not (as of 2.8x), so its event loop takes a whole core. Exported as
/// the gauge `aviary_client_connections` and the counter `aviary_client_connections_refused_total`.
public final class ConnectionLimit: Sendable {
    public let limit: Int
    private let open = Atomic<Int>(0)
    private let gauge = Gauge(label: "aviary_client_connections")
    private let refused = Counter(label: "aviary_client_connections_refused_total")

    public init(limit: Int) {
        self.limit = limit
    }

    /// Counts `channel` in until it closes; false when that makes more than the limit (the caller
    /// then refuses it).
    public func admit(_ channel: any Channel) -> Bool {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        gauge.record(count)
        channel.closeFuture.whenComplete { [self] _ in
            gauge.record(open.wrappingSubtract(1, ordering: .relaxed).newValue)
        }
        guard count > limit else { return true }
        refused.increment()
        return false
    }

    /// Why a connection was refused, for its peer.
    public var refusal: String {
        "the server holds as many connections as it may (\(limit)); retry shortly or on another instance"
    }

    /// The default limit: the process's file descriptors (its soft `RLIMIT_NOFILE`) less a tenth of
    /// them, and at least 256, for everything else the process opens; never under 64.
    public static var defaultLimit: Int {
        guard let descriptors = FileDescriptorLimit.soft else { return 1024 }
        return max(64, descriptors - max(256, descriptors / 10))
    }
}

/// The process's file descriptor limit (`RLIMIT_NOFILE`).
public enum FileDescriptorLimit {
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// The soft limit (at most 10,000,000), or nil when it cannot be read.
    public static var soft: Int? {
        var limits = rlimit()
        guard getrlimit(resource, &limits) == 0 else { return nil }
        return Int(clamping: min(limits.rlim_cur, 10_000_000))
    }

    /// Raises the soft limit to the hard one, as a server that holds a connection per client
    /// should (Go's runtime does the same): a shell's soft limit is often 1,024 under a hard limit
    /// of a million, and ``ConnectionLimit/defaultLimit`` follows the soft limit. Changes nothing
    /// when they are equal (systemd's `LimitNOFILE=` sets both) or when the call fails.
    public static func raiseSoftToHard() {
        var limits = rlimit()
        guard getrlimit(resource, &limits) == 0, limits.rlim_cur < limits.rlim_max else { return }
        limits.rlim_cur = limits.rlim_max
        _ = setrlimit(resource, &limits)
    }
}

/// Refuses a connection: as soon as it is active, sends `message` (why, in the listener's
/// protocol), reads nothing, and closes it. Add it in place of the listener's own handlers.
public final class RefusingHandler: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private let message: [UInt8]

    public init(sending message: [UInt8]) {
        self.message = message
    }

    /// A JSON-RPC connection's refusal: an `unavailable` error with id null.
    public static func jsonRPC(_ reason: String) -> RefusingHandler {
        RefusingHandler(sending: ResponseEncoding.line(RPCError.unavailable(reason)))
    }

    public func channelActive(context: ChannelHandlerContext) {
        context.writeAndClose(message)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

extension ChannelHandlerContext {
    /// Writes `bytes` (perhaps none: what is already written is flushed), then closes the channel.
    func writeAndClose(_ bytes: [UInt8]) {
        let channel = self.channel
        writeAndFlush(NIOAny(ByteBuffer(bytes: bytes))).whenComplete { _ in channel.close(promise: nil) }
    }
}

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
        var limits = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1024 }
        let descriptors = Int(clamping: min(limits.rlim_cur, 10_000_000))
        return max(64, descriptors - max(256, descriptors / 10))
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
        var frame = ResponseEncoding.error(RPCError.unavailable(reason), id: .null)
        frame.append(UInt8(ascii: "\n"))
        return RefusingHandler(sending: Array(frame))
    }

    public func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: message))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

import Metrics
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The client connections a server holds at once, up to a limit: one more is told that the server
/// is full and closed, so that clients cannot take every file descriptor the process has. Its
/// Postgres, Redis and peer connections need some too, and a process out of descriptors spins: the
/// listening socket stays readable while every accept fails (EMFILE), and SwiftNIO keeps it
/// registered, `AcceptBackoffHandler` or not (as of 2.8x), so its event loop takes a whole core.
/// Exported as the gauge `rpc_server_connections` and the counter `rpc_server_connections_refused_total`.
final class ConnectionLimit: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    private let gauge = Gauge(label: "rpc_server_connections")
    private let refused = Counter(label: "rpc_server_connections_refused_total")

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts `channel` in until it closes and returns true; when the server is full, gives it a
    /// pipeline that answers an `unavailable` error (id null) and closes, and returns false.
    func admit(_ channel: any Channel) throws -> Bool {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        gauge.record(count)
        channel.closeFuture.whenComplete { [self] _ in
            gauge.record(open.wrappingSubtract(1, ordering: .relaxed).newValue)
        }
        guard count > limit else { return true }
        refused.increment()
        try channel.pipeline.syncOperations.addHandler(RefusingHandler(limit: limit))
        return false
    }

    /// The default limit: the process's file descriptors (its soft `RLIMIT_NOFILE`) less a tenth of
    /// them, and at least 256, for everything else the process opens; never under 64.
    static var defaultLimit: Int {
        var limits = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1024 }
        let descriptors = Int(clamping: min(limits.rlim_cur, 10_000_000))
        return max(64, descriptors - max(256, descriptors / 10))
    }
}

/// Tells a connection over the limit why it is closed as soon as it is active, then closes it.
private final class RefusingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func channelActive(context: ChannelHandlerContext) {
        let error = RPCError.unavailable(
            "the server holds as many connections as it may (\(limit)); retry shortly or on another instance")
        var frame = ResponseEncoding.error(error, id: .null)
        frame.append(UInt8(ascii: "\n"))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: frame))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

import AviaryJSON
import ChannelSupport
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// One client connection to a JSON-RPC server. Calls may overlap (they are pipelined and paired
/// by id); notifications the server pushes arrive on `notifications`.
public final class RPCClientConnection: Sendable {
    public let notifications: AsyncStream<RPCNotification>
    private let channel: any Channel
    private let nextID = Atomic<Int64>(1)

    private init(channel: any Channel, notifications: AsyncStream<RPCNotification>) {
        self.channel = channel
        self.notifications = notifications
    }

    /// Connects to `host:port`.
    public static func connect(
        host: String, port: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maxFrameBytes: Int = 1 << 20, connectTimeout: Duration = .seconds(2)
    ) async throws -> RPCClientConnection {
        let (stream, continuation) = AsyncStream.makeStream(
            of: RPCNotification.self, bufferingPolicy: .bufferingNewest(10_000))
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(connectTimeout.milliseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: RPCClientHandler.backlogLimit)
            .channelInitializer { channel in
                channel.closeFuture.whenComplete { _ in continuation.finish() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(NewlineFrameDecoder(maxFrameBytes: maxFrameBytes)),
                        RPCClientHandler(onNotification: { continuation.yield($0) }),
                    ])
                }
            }
            .connect(host: host, port: port).get()
        return RPCClientConnection(channel: channel, notifications: stream)
    }

    public var isActive: Bool { channel.isActive }

    /// The loop the connection runs on, where `notifications` are yielded: a task that reads them
    /// with this loop as its executor preference takes no thread hop per notification.
    public var eventLoop: any EventLoop { channel.eventLoop }

    /// Sends a request whose params are `params` (a JSON object) with `meta` spliced in as `_meta`.
    public func send(
        _ method: String, params: RawJSON = .emptyObject, meta: RequestMeta = RequestMeta(),
        timeout: Duration = .seconds(10)
    ) async throws -> RPCResponse {
        var meta = meta
        meta.timeoutMs = min(meta.timeoutMs ?? .max, timeout.milliseconds)
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let frame = try RequestEncoding.request(id: id, method: method, params: params, meta: meta)
        let promise = channel.eventLoop.makePromise(of: RPCResponse.self)
        let call = OutgoingCall(
            id: id, frame: ByteBuffer(bytes: frame), promise: promise, timeout: .milliseconds(timeout.milliseconds))
        // Once the channel has closed, NIO has removed the handler, and the call would reach no one
        // (nor its timer): failing its write is then the only news of it. A call the handler took
        // and could not write fails the same way (the handler also drops it and its timer).
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in promise.fail(RPCError.callNotSent) }
        channel.writeAndFlush(ClientOutbound.call(call), promise: written)
        return try await promise.futureResult.get()
    }

    /// Calls `method` with typed params and decodes its result; an error response is thrown as `RPCError`.
    public func call<Result: Decodable>(
        _ method: String, params: some Encodable = RawJSON.emptyObject, meta: RequestMeta = RequestMeta(),
        timeout: Duration = .seconds(10), as type: Result.Type = Result.self
    ) async throws -> Result {
        try await send(method, params: RawJSON(encoding: params), meta: meta, timeout: timeout).decode(type)
    }

    /// Writes a frame exactly as given (plus the newline), for tools and protocol tests.
    public func writeRaw(_ frame: [UInt8]) async throws {
        var buffer = channel.allocator.buffer(capacity: frame.count + 1)
        buffer.writeBytes(frame)
        buffer.writeInteger(UInt8(ascii: "\n"))
        try await channel.writeAndFlush(ClientOutbound.raw(buffer))
    }

    public func close() async {
        try? await channel.close()
    }
}

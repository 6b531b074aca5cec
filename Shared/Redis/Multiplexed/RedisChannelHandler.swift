import CHiredis
import NIOCore

/// Commands that go out together and are answered together: one caller's pipeline.
struct RedisRequest {
    var commands: [[RedisArgument]]
    var promise: EventLoopPromise<[RESPValue]>
}

/// One Redis connection shared by many callers at once. Requests are written in the order they
/// come, each pipeline contiguously (so a `MULTI`…`EXEC` pipeline stays whole), and Redis answers
/// in that order, so replies are paired with requests first-in, first-out; requests sent in the same
/// event-loop tick leave in one `write(2)` (``FlushCoalescingHandler``), so Redis reads them as one
/// pipeline. Replies are parsed by hiredis's protocol reader, fed with the bytes NIO reads: no
/// thread ever blocks on the socket.
///
/// A request that waits longer than `commandTimeout` for its replies fails with `.timeout`, and
/// so does every other request on the connection, which is then closed: a reply that comes later
/// could no longer be paired with its request.
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private struct Pending {
        var request: RedisRequest
        var replies: [RESPValue]
        var sequence: UInt64
        var deadline: NIODeadline
    }

    private let commandTimeout: TimeAmount
    /// hiredis's RESP parser; owned by this handler and used only on its event loop.
    private let reader: UnsafeMutablePointer<redisReader>
    private var pending = CircularBuffer<Pending>()
    private var nextSequence: UInt64 = 1
    /// Every request up to this one has been handed to the kernel whole.
    private var writtenThrough: UInt64 = 0
    private var timer: Scheduled<Void>?
    private var closing = false
    private var context: ChannelHandlerContext?

    init(commandTimeout: TimeAmount) {
        self.commandTimeout = commandTimeout
        self.reader = redisReaderCreate()
    }

    deinit {
        redisReaderFree(reader)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        timer?.cancel()
        failAll(code: .connectionFailed, detail: "the connection was closed")
    }

    // MARK: Writing

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        guard !closing, context.channel.isActive else {
            request.promise.fail(
                RedisConnectionFailure(
                    error: RedisError(.connectionFailed, detail: "the connection is closed"), requestMayHaveArrived: false))
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: Self.encodedSize(of: request.commands))
        for command in request.commands { Self.encode(command, into: &buffer) }
        let sequence = nextSequence
        nextSequence += 1
        let deadline = NIODeadline.now() + commandTimeout
        pending.append(Pending(request: request, replies: [], sequence: sequence, deadline: deadline))
        if timer == nil { armTimer(context, at: deadline) }
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenSuccess {
            handler.value.writtenThrough = max(handler.value.writtenThrough, sequence)
        }
        context.write(wrapOutboundOut(buffer), promise: written)
    }

    /// RESP: `*<count>\r\n` then `$<length>\r\n<bytes>\r\n` per argument.
    static func encode(_ command: [RedisArgument], into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "*"))
        writeDecimal(command.count, into: &buffer)
        for argument in command {
            buffer.writeInteger(UInt8(ascii: "$"))
            writeDecimal(argument.bytes.count, into: &buffer)
            buffer.writeBytes(argument.bytes)
            buffer.writeStaticString("\r\n")
        }
    }

    private static func encodedSize(of commands: [[RedisArgument]]) -> Int {
        commands.reduce(0) { total, command in
            command.reduce(total + 16) { $0 + $1.bytes.count + 16 }
        }
    }

    private static func writeDecimal(_ value: Int, into buffer: inout ByteBuffer) {
        if value < 10 {
            buffer.writeInteger(UInt8(ascii: "0") + UInt8(value))
        } else {
            buffer.writeString(String(value))
        }
        buffer.writeStaticString("\r\n")
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        let fed = bytes.withUnsafeReadableBytes { raw in
            raw.withMemoryRebound(to: CChar.self) { redisReaderFeed(reader, $0.baseAddress, $0.count) }
        }
        guard fed == REDIS_OK else { return protocolFailure(context) }
        while true {
            var reply: UnsafeMutableRawPointer?
            guard redisReaderGetReply(reader, &reply) == REDIS_OK else { return protocolFailure(context) }
            guard let reply else { return }
            let value = RESPValue(copying: reply.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(reply)
            guard !pending.isEmpty else {
                // Redis never speaks unasked on a connection that is not subscribed.
                fail(context, code: .protocolError, detail: "a reply came that no request asked for")
                return
            }
            pending[pending.startIndex].replies.append(value)
            if pending[pending.startIndex].replies.count == pending[pending.startIndex].request.commands.count {
                let done = pending.removeFirst()
                done.request.promise.succeed(done.replies)
                if closing && pending.isEmpty { context.close(promise: nil) }
            }
        }
    }

    private func protocolFailure(_ context: ChannelHandlerContext) {
        let message = withUnsafeBytes(of: reader.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        fail(context, code: .protocolError, detail: "hiredis: \(message)")
    }

    // MARK: Closing

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        failAll(code: .connectionFailed, detail: "the connection closed before Redis answered")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, code: .connectionFailed, detail: "\(error)")
    }

    /// ``RedisCloseWhenIdle``: close once every request in flight has its replies.
    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is RedisCloseWhenIdle else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        closing = true
        if pending.isEmpty { context.close(promise: nil) }
        promise?.succeed()
    }

    private func fail(_ context: ChannelHandlerContext, code: RedisError.Code, detail: String) {
        failAll(code: code, detail: detail)
        context.close(promise: nil)
    }

    private func failAll(code: RedisError.Code, detail: String) {
        let failed = pending
        pending.removeAll()
        for entry in failed {
            // Redis runs only complete commands, so one command that was not written whole never ran;
            // of a pipeline cut short, the commands before the cut may have.
            let mayHaveArrived = entry.sequence <= writtenThrough || entry.request.commands.count > 1
            entry.request.promise.fail(
                RedisConnectionFailure(error: RedisError(code, detail: detail), requestMayHaveArrived: mayHaveArrived))
        }
    }

    /// One timer per connection, set for the oldest request's deadline: when it fires, either that
    /// request is late (the connection is given up) or the timer moves on to the new oldest.
    private func armTimer(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let this = handler.value
            this.timer = nil
            guard let context = this.context, let oldest = this.pending.first else { return }
            if oldest.deadline <= .now() {
                this.fail(context, code: .timeout, detail: "Redis did not answer within the command timeout")
            } else {
                this.armTimer(context, at: oldest.deadline)
            }
        }
    }
}

/// Asks a ``RedisChannelHandler`` to close its connection once nothing is in flight.
struct RedisCloseWhenIdle: Sendable {}

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
        var sequence: UInt64
        var deadline: NIODeadline
    }

    private let commandTimeout: TimeAmount
    /// hiredis's RESP parser; owned by this handler and used only on its event loop.
    private let reader: UnsafeMutablePointer<redisReader>
    private var pending = CircularBuffer<Pending>()
    /// The replies that have come for the oldest pending request. Kept here rather than in its
    /// `Pending`, which `CircularBuffer`'s subscript would copy, and the array with it, per reply.
    private var oldestReplies: [RESPValue] = []
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
        let buffer = Self.encode(request.commands, allocator: context.channel.allocator)
        let sequence = nextSequence
        nextSequence += 1
        let deadline = NIODeadline.now() + commandTimeout
        pending.append(Pending(request: request, sequence: sequence, deadline: deadline))
        if timer == nil { armTimer(context, at: deadline) }
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenSuccess {
            handler.value.writtenThrough = max(handler.value.writtenThrough, sequence)
        }
        context.write(wrapOutboundOut(buffer), promise: written)
    }

    /// RESP: `*<count>\r\n` then `$<length>\r\n<bytes>\r\n` per argument, written straight into
    /// a buffer of the exact size in one pass.
    static func encode(_ commands: [[RedisArgument]], allocator: ByteBufferAllocator) -> ByteBuffer {
        let size = encodedSize(of: commands)
        var buffer = allocator.buffer(capacity: size)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var offset = 0
            func put(_ byte: UInt8) {
                raw[offset] = byte
                offset += 1
            }
            func putHeader(_ marker: UInt8, _ value: Int) {
                put(marker)
                let digits = decimalDigits(value)
                var rest = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    raw[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                offset += digits
                put(UInt8(ascii: "\r"))
                put(UInt8(ascii: "\n"))
            }
            for command in commands {
                putHeader(UInt8(ascii: "*"), command.count)
                for argument in command {
                    putHeader(UInt8(ascii: "$"), argument.bytes.count)
                    argument.bytes.withUnsafeBytes { bytes in
                        UnsafeMutableRawBufferPointer(rebasing: raw[offset..<offset + bytes.count]).copyMemory(from: bytes)
                    }
                    offset += argument.bytes.count
                    put(UInt8(ascii: "\r"))
                    put(UInt8(ascii: "\n"))
                }
            }
            return offset
        }
        return buffer
    }

    /// The bytes `encode` writes for `commands`.
    private static func encodedSize(of commands: [[RedisArgument]]) -> Int {
        commands.reduce(0) { total, command in
            command.reduce(total + 3 + decimalDigits(command.count)) { size, argument in
                size + 5 + decimalDigits(argument.bytes.count) + argument.bytes.count
            }
        }
    }

    /// The digits of `value` (not negative) in decimal.
    private static func decimalDigits(_ value: Int) -> Int {
        var digits = 1
        var rest = value
        while rest >= 10 {
            digits += 1
            rest /= 10
        }
        return digits
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
            if oldestReplies.isEmpty { oldestReplies.reserveCapacity(pending[pending.startIndex].request.commands.count) }
            oldestReplies.append(value)
            if oldestReplies.count == pending[pending.startIndex].request.commands.count {
                let done = pending.removeFirst()
                let replies = oldestReplies
                oldestReplies = []
                done.request.promise.succeed(replies)
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
        oldestReplies = []
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

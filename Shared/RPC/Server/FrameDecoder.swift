import Foundation
import NIOCore

/// What the frame decoder hands on: a complete frame, or the news that the peer sent one over the
/// limit or too slowly.
package enum InboundFrame {
    case frame(ByteBuffer)
    case tooLarge(limit: Int)
    case tooSlow(timeout: TimeAmount)
}

/// Splits a byte stream into newline-delimited frames (`\n`, or `\r\n`), refusing any frame longer
/// than `maxFrameBytes` without buffering it whole. Empty lines are skipped.
///
/// With a `frameTimeout`, a frame that has not ended that long after its first byte arrived is
/// reported (`tooSlow`), and the server answers and closes the connection: a frame is buffered until its newline comes, and without a deadline a peer could
/// send most of one and go quiet (or trickle a byte now and then), thousands of connections holding
/// gigabytes. Between frames a connection may stay idle as long as it likes: a subscriber waits for
/// pushes, a pooled client for work.
///
/// Package-wide so that the fuzz target (`Fuzz/FrameDecoderFuzz`) can drive it.
package struct NewlineFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = InboundFrame

    package let maxFrameBytes: Int
    package let frameTimeout: TimeAmount?
    private var scanned = 0
    private var failed = false
    /// Set while a frame is arriving (with a `frameTimeout`): the close when it has not ended in time.
    private var deadline: Scheduled<Void>?

    package init(maxFrameBytes: Int, frameTimeout: TimeAmount? = nil) {
        self.maxFrameBytes = maxFrameBytes
        self.frameTimeout = frameTimeout
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        guard var length = Self.newline(in: buffer, from: scanned) else {
            scanned = buffer.readableBytes
            // One byte more may be the `\r` of a `\r\n` whose `\n` has yet to come.
            if scanned > maxFrameBytes + 1 {
                fail(context: context, buffer: &buffer)
            } else if deadline == nil, let frameTimeout {
                // The first bytes of a frame: it must end in time, or the next handler hears so (and
                // answers and closes, as for a frame over the limit).
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                deadline = context.eventLoop.scheduleTask(in: frameTimeout) {
                    bound.value.fireChannelRead(NIOAny(InboundFrame.tooSlow(timeout: frameTimeout)))
                }
            }
            return .needMoreData
        }
        scanned = 0
        cancelDeadline()
        if length > maxFrameBytes + 1 {
            fail(context: context, buffer: &buffer)
            return .needMoreData
        }
        let frame = buffer.readSlice(length: length + 1)!
        if length > 0, frame.getInteger(at: frame.readerIndex + length - 1, as: UInt8.self) == UInt8(ascii: "\r") {
            length -= 1
        }
        guard length > 0 else { return .continue }
        guard length <= maxFrameBytes else {
            fail(context: context, buffer: &buffer)
            return .needMoreData
        }
        context.fireChannelRead(wrapInboundOut(.frame(frame.getSlice(at: frame.readerIndex, length: length)!)))
        return .continue
    }

    package mutating func decoderRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        cancelDeadline()
        while try decode(context: context, buffer: &buffer) == .continue {}
        // A final frame without its newline is still a frame.
        if !failed, buffer.readableBytes > 0, let rest = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(.frame(rest)))
        }
        return .needMoreData
    }

    /// Where the first `\n` at or after `offset` of the readable bytes is, if any. `memchr` looks at
    /// many bytes a step, where a byte-by-byte search is slow for a large answer.
    private static func newline(in buffer: ByteBuffer, from offset: Int) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            guard offset < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), bytes.count - offset)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }

    private mutating func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    private mutating func fail(context: ChannelHandlerContext, buffer: inout ByteBuffer) {
        cancelDeadline()
        failed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireChannelRead(wrapInboundOut(.tooLarge(limit: maxFrameBytes)))
    }
}

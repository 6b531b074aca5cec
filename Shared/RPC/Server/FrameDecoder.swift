import NIOCore

/// What the frame decoder hands on: a complete frame, or the news that the peer sent one over the limit.
enum InboundFrame {
    case frame(ByteBuffer)
    case tooLarge(limit: Int)
}

/// Splits a byte stream into newline-delimited frames (`\n`, or `\r\n`), refusing any frame longer
/// than `maxFrameBytes` without buffering it whole. Empty lines are skipped.
struct NewlineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = InboundFrame

    let maxFrameBytes: Int
    private var scanned = 0
    private var failed = false

    init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        guard let newline = view[(view.startIndex + scanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = view.count
            if view.count > maxFrameBytes { fail(context: context, buffer: &buffer) }
            return .needMoreData
        }
        var length = newline - view.startIndex
        scanned = 0
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

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // A final frame without its newline is still a frame.
        if !failed, buffer.readableBytes > 0, let rest = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(.frame(rest)))
        }
        return .needMoreData
    }

    private mutating func fail(context: ChannelHandlerContext, buffer: inout ByteBuffer) {
        failed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireChannelRead(wrapInboundOut(.tooLarge(limit: maxFrameBytes)))
    }
}

import NIOCore

/// Closes a connection whose frame has not ended `timeout` after its first byte arrived.
///
/// A frame may hold up to the frame limit (1 MiB, 4 MiB for media), buffered until its newline
/// comes. Without a deadline, a peer could send most of one and go quiet (or trickle a byte now
/// and then), and thousands of such connections would hold gigabytes. Between frames a connection
/// may stay idle as long as it likes: a subscriber waits for pushes, a pooled client for work.
final class FrameDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    /// Set while a frame is arriving: when it must have ended.
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        let lastNewline = bytes.withUnsafeReadableBytes { $0.lastIndex(of: UInt8(ascii: "\n")) }
        switch lastNewline {
        case .none where bytes.readableBytes > 0:
            // More of the frame that is arriving (or the first bytes of one): its deadline stands.
            if deadline == nil { startDeadline(context) }
        case .some(let index) where index == bytes.readableBytes - 1:
            // Ends exactly at a frame's end: nothing is arriving.
            cancelDeadline()
        case .some:
            // A frame ended here and the next one began: its own deadline starts now.
            cancelDeadline()
            startDeadline(context)
        case .none:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadline()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    private func startDeadline(_ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            bound.value.close(promise: nil)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}

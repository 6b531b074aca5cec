import NIOCore

/// Turns the flushes asked for within one event-loop tick into one, at the end of the tick: frames
/// that are ready together leave in one `write(2)`, and the peer reads them as one batch. Sits
/// between the socket and the handlers that flush; writes pass through untouched.
public final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var flushScheduled = false

    public init() {}

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    public func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let this = handler.value
            this.flushScheduled = false
            this.context?.flush()
        }
    }
}

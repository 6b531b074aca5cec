import Foundation
import NIOCore
import NIOExtras

/// One connection's request loop. Each frame is answered in its own task, run on the connection's
/// event loop, so pipelined calls run concurrently and their responses go out in completion order.
/// A frame waits, and reading pauses, while `maxInFlight` calls are running or while the answers
/// already written exceed the socket's high-water mark (the peer is not reading them): so a peer
/// that sends calls and never reads the answers holds at most `maxInFlight` answers in the server's
/// memory, not one per call it sent. A batch counts as the most calls a batch may hold. On quiesce
/// the connection stops reading, finishes what is in flight, and closes; frames still waiting then
/// are dropped, as if they had come after. When the peer goes away, its calls in flight are
/// cancelled and the frames still waiting are dropped: nobody is left to answer, and a peer that
/// sends a thousand calls and hangs up, again and again, must not pile work up behind it.
final class RPCServerHandler: ChannelDuplexHandler {
    typealias InboundIn = InboundFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let router: RPCRouter
    private let maxInFlight: Int
    private var connection: RPCConnection?
    private var executor: EventLoopTaskExecutor?
    private var context: ChannelHandlerContext?
    private var inFlight = 0
    /// Frames read and not started yet (see the type's documentation).
    private var waiting = CircularBuffer<ByteBuffer>()
    private var readPending = false
    private var quiescing = false
    /// The calls in flight, by a number of this connection's, to cancel when the peer goes away.
    private var running: [Int: Task<Void, Never>] = [:]
    private var nextCall = 0
    private var isInactive = false

    init(router: RPCRouter, maxInFlight: Int) {
        self.router = router
        self.maxInFlight = maxInFlight
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connection = RPCConnection(channel: context.channel)
        executor = EventLoopTaskExecutor(eventLoop: context.eventLoop)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        isInactive = true
        waiting.removeAll()
        for call in running.values { call.cancel() }
        running.removeAll()
        connection?.closed()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .tooLarge(let limit):
            let error = RPCError.invalidRequest("frame too large: the limit is \(limit) bytes per message")
            context.writeAndClose(ResponseEncoding.line(error))
        case .tooSlow(let timeout):
            let milliseconds = timeout.nanoseconds / 1_000_000
            let within = milliseconds.isMultiple(of: 1000) ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
            let error = RPCError.invalidRequest("frame too slow: a message must arrive within \(within) of its first byte")
            context.writeAndClose(ResponseEncoding.line(error))
        case .frame(let buffer):
            guard !quiescing else { return }
            waiting.append(buffer)
            startWaiting(context)
        }
    }

    /// Whether another call may start now.
    private func mayStart(_ context: ChannelHandlerContext) -> Bool {
        inFlight < maxInFlight && context.channel.isWritable
    }

    /// The calls a frame may start: a batch counts as many as a batch may hold, since its requests
    /// run at once.
    private static func calls(in frame: ByteBuffer) -> Int {
        RPCRouter.isBatch(frame.readableBytesView) ? RPCRouter.maxBatchLength : 1
    }

    /// Starts the waiting frames while calls may start; a batch waits until its calls fit, unless
    /// nothing else runs.
    private func startWaiting(_ context: ChannelHandlerContext) {
        while !isInactive, mayStart(context), let buffer = waiting.first {
            let calls = Self.calls(in: buffer)
            guard inFlight == 0 || inFlight + calls <= maxInFlight else { return }
            waiting.removeFirst()
            inFlight += calls
            let frame = Data(buffer.readableBytesView)
            let router = self.router
            let connection = self.connection
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let number = nextCall
            nextCall &+= 1
            running[number] = Task(executorPreference: executor) {
                let response = await router.respond(to: frame, connection: connection)
                eventLoop.execute { handler.value.finished(response, calls: calls, number: number) }
            }
        }
    }

    private func finished(_ response: Data?, calls: Int, number: Int) {
        running[number] = nil
        inFlight -= calls
        guard let context else { return }
        if var response {
            response.append(UInt8(ascii: "\n"))
            // The pipeline's FlushCoalescingHandler sends the responses of one tick in one write.
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: response)), promise: nil)
        }
        if quiescing {
            if inFlight == 0 { closeAfterFlush(context) }
        } else {
            resume(context)
        }
    }

    /// Starts what waits and reads again, as far as calls may start.
    private func resume(_ context: ChannelHandlerContext) {
        startWaiting(context)
        if readPending && waiting.isEmpty && mayStart(context) {
            readPending = false
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !quiescing && context.channel.isWritable { resume(context) }
        context.fireChannelWritabilityChanged()
    }

    private func closeAfterFlush(_ context: ChannelHandlerContext) {
        context.writeAndClose([])
    }

    func read(context: ChannelHandlerContext) {
        if quiescing { return }
        if waiting.isEmpty && mayStart(context) {
            context.read()
        } else {
            readPending = true
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            quiescing = true
            waiting.removeAll()
            if inFlight == 0 { closeAfterFlush(context) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Resets and broken pipes end the connection; there is no one left to answer.
        context.close(promise: nil)
    }
}

import Foundation
import Locking
import NIOCore
import NIOWebSocket
import RPC

/// One upgraded WebSocket, on its connection's event loop: the frames of RFC 6455 (messages in
/// fragments, ping and pong, the closing handshake), and the calls of its messages.
///
/// Each text message is answered by the socket's session (``SocketMessages``: JSON-RPC at
/// `GET /rpc`, Mastodon's streaming at `GET /api/v1/streaming`) in a task of its own, run on
/// the connection's loop and ended with its answer; an idle socket holds no task. While
/// ``GatewaySettings/callsInFlightPerSocket`` calls run the socket is not read. What is sent waits in the channel; a client that leaves more than
/// ``maxQueuedBytes`` unread is hung up on, so that it holds at most that much of the gateway's
/// memory. The gateway pings every ``pingInterval`` and closes a socket whose client did not answer
/// the previous ping.
final class SocketHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    static let maxQueuedBytes = 8 << 20
    static let pingInterval = TimeAmount.seconds(30)
    /// How long a close frame waits for the client's before the connection is closed.
    static let closeTimeout = TimeAmount.seconds(5)

    private let gateway: GatewayService
    private let admission: SocketAdmission
    private var context: ChannelHandlerContext?
    private var session: (any SocketMessages)?
    private var executor: EventLoopTaskExecutor?
    private var pinger: RepeatedTask?
    /// The first fragments of a message whose last has not arrived.
    private var fragments: ByteBuffer?
    private var fragmentsAreText = false
    /// Text messages read and not started yet.
    private var waiting = CircularBuffer<Data>()
    private var inFlight = 0
    private var readPending = false
    private var awaitingPong = false
    private var closeSent = false
    private var countedForAddress = false
    private var isInactive = false

    init(gateway: GatewayService, admission: SocketAdmission) {
        self.gateway = gateway
        self.admission = admission
    }

    private var address: String { admission.caller.address ?? "" }

    // MARK: The socket's life

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let link = SocketLink(handler: NIOLoopBound(self, eventLoop: context.eventLoop), channel: context.channel)
        let session = admission.session(gateway: gateway, link: link)
        self.session = session
        executor = EventLoopTaskExecutor(eventLoop: context.eventLoop)
        gateway.openSockets.add(link)
        // Counted here, as the user's socket is by `open()`: sockets opened at once may all have
        // passed the upgrade's check.
        countedForAddress = gateway.socketsPerAddress.claim(address)
        guard countedForAddress else {
            return close(.policyViolation, reason: GatewayService.tooManySockets(fromAddress: gateway.socketsPerAddress.limit))
        }
        if let refusal = session.open() { return close(.policyViolation, reason: refusal) }
        pinger = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.pingInterval, delay: Self.pingInterval) { [link] _ in
            link.handler.value.ping()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isInactive = true
        // The timer's closure holds this handler: dropped, so that the socket's memory goes with it.
        pinger?.cancel()
        pinger = nil
        waiting.removeAll()
        fragments = nil
        if countedForAddress { gateway.socketsPerAddress.release(address) }
        if let session { gateway.openSockets.remove(session.link) }
        endIfDone()
        context.fireChannelInactive()
    }

    /// Once the socket is closed and no call of it runs (one could still subscribe): its
    /// subscriptions end, whatever ended it, and its user's count is given back. The session (whose
    /// subscriptions' closures hold this handler) is let go.
    private func endIfDone() {
        guard isInactive, inFlight == 0, let session else { return }
        self.session = nil
        Task(executorPreference: executor) { await session.end() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A frame that breaks the protocol was answered by NIO's WebSocketProtocolErrorHandler,
        // before this handler, with its close code; the connection closes after it. Anything else
        // (a reset, a broken pipe) ends the socket: nobody is left to answer.
        if error is NIOWebSocketError {
            closeSent = true
        } else {
            context.close(promise: nil)
        }
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil, !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            return close(.protocolError, reason: "a client's frames are masked and set no reserved bits")
        }
        switch frame.opcode {
        case .text, .binary:
            guard fragments == nil else {
                return close(.protocolError, reason: "a new message began before the last one's final fragment")
            }
            if frame.fin {
                received(frame.unmaskedData, isText: frame.opcode == .text)
            } else {
                fragments = frame.unmaskedData
                fragmentsAreText = frame.opcode == .text
            }
        case .continuation:
            guard var message = fragments else {
                return close(.protocolError, reason: "a continuation frame without a message to continue")
            }
            fragments = nil
            guard message.readableBytes + frame.length <= gateway.settings.maxMessageBytes else {
                return close(.messageTooLarge, reason: "a message is at most \(gateway.settings.maxMessageBytes) bytes")
            }
            var data = frame.unmaskedData
            message.writeBuffer(&data)
            if frame.fin {
                received(message, isText: fragmentsAreText)
            } else {
                fragments = message
            }
        case .ping:
            write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
        case .pong:
            awaitingPong = false
        case .connectionClose:
            if closeSent {
                context.close(promise: nil)
            } else {
                // The client's code, echoed as the closing handshake asks, then the connection closed.
                closeSent = true
                var data = frame.unmaskedData
                let code = data.readSlice(length: min(2, data.readableBytes)) ?? ByteBuffer()
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)))
                    .whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
            }
        default:
            close(.protocolError, reason: "unknown opcode")
        }
    }

    /// A whole message: a text one is the session's to answer, a binary one is refused.
    private func received(_ message: ByteBuffer, isText: Bool) {
        guard !closeSent else { return }
        guard isText else {
            if let session { send(session.binaryRefusal) }
            return
        }
        let text = Data(message.readableBytesView)
        guard (try? UTF8Span(validating: text.span)) != nil else {
            return close(.dataInconsistentWithMessage, reason: "a text message is UTF-8")
        }
        waiting.append(text)
        startWaiting()
    }

    private func startWaiting() {
        guard let session else { return }
        while !isInactive, !closeSent, inFlight < GatewaySettings.callsInFlightPerSocket, let text = waiting.popFirst() {
            inFlight += 1
            let link = session.link
            Task(executorPreference: executor) {
                let answer = await session.answer(text)
                link.channel.eventLoop.execute { link.handler.value.finished(answer) }
            }
        }
    }

    private func finished(_ answer: Data?) {
        inFlight -= 1
        if let answer { send(answer) }
        resume()
        endIfDone()
    }

    /// Starts what waits and reads again, as far as calls may start.
    private func resume() {
        startWaiting()
        guard let context, readPending, mayRead else { return }
        readPending = false
        context.read()
    }

    private var mayRead: Bool {
        waiting.isEmpty && inFlight < GatewaySettings.callsInFlightPerSocket
    }

    func read(context: ChannelHandlerContext) {
        if mayRead {
            context.read()
        } else {
            readPending = true
        }
    }

    // MARK: Writing

    /// Sends `text` as one text message, unless the socket is closing; hangs up on a client that
    /// leaves more than ``maxQueuedBytes`` unread.
    func send(_ text: Data) {
        guard !closeSent, let context else { return }
        let queued = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        guard queued + text.count <= Self.maxQueuedBytes else {
            // Its writes wait for a client that does not read: a close frame would wait behind them.
            closeSent = true
            context.close(promise: nil)
            return
        }
        write(WebSocketFrame(fin: true, opcode: .text, data: context.channel.allocator.buffer(bytes: text)))
    }

    private func write(_ frame: WebSocketFrame) {
        context?.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    /// Starts the closing handshake: a close frame with `code` and `reason`, then the connection
    /// closed when the client answers or ``closeTimeout`` has passed.
    func close(_ code: WebSocketErrorCode, reason: String) {
        guard !closeSent, let context else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 125)
        data.write(webSocketErrorCode: code)
        // A control frame carries at most 125 bytes: the code and 123 of the reason, whole characters.
        var utf8 = reason.utf8.prefix(123)
        while String(validating: utf8, as: UTF8.self) == nil { utf8 = utf8.dropLast() }
        data.writeBytes(utf8)
        write(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) }
    }

    private func ping() {
        guard !closeSent else { return }
        if awaitingPong {
            return close(.goingAway, reason: "no pong to the last ping")
        }
        awaitingPong = true
        write(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()))
    }
}

/// What an upgraded socket's messages mean, and what it holds while it is open.
protocol SocketMessages: AnyObject, Sendable {
    var link: SocketLink { get }
    /// The answer to a binary message.
    var binaryRefusal: Data { get }
    /// Starts the socket's work; the reason to close it at once, if any.
    func open() -> String?
    /// The answer to one text message; nil for none.
    func answer(_ frame: Data) async -> Data?
    /// Ends what the socket holds (subscriptions, its place among its user's sockets).
    func end() async
}

/// What other threads hold of a socket: its handler, reached on the socket's event loop, in the
/// order of the calls (so a subscription's events keep their order, and an answer its place).
struct SocketLink: Sendable {
    let handler: NIOLoopBound<SocketHandler>
    let channel: any Channel

    var id: ObjectIdentifier { ObjectIdentifier(channel) }

    func send(_ text: Data) {
        channel.eventLoop.execute { handler.value.send(text) }
    }

    func close(_ code: WebSocketErrorCode, reason: String) {
        channel.eventLoop.execute { handler.value.close(code, reason: reason) }
    }
}

/// The open sockets of this gateway, told to reconnect elsewhere when it shuts down.
final class OpenSockets: Sendable {
    private let links = Locked<[ObjectIdentifier: SocketLink]>([:])

    func add(_ link: SocketLink) {
        links.withLock { $0[link.id] = link }
    }

    func remove(_ link: SocketLink) {
        links.withLock { _ = $0.removeValue(forKey: link.id) }
    }

    /// Closes every socket with 1001 (going away): apps reconnect, to another instance.
    func closeAll() {
        for link in links.withLock({ Array($0.values) }) {
            link.close(.goingAway, reason: "the gateway is shutting down: reconnect")
        }
    }
}

import AviaryJSON
import Foundation
import NIOCore

/// What the client writes: a call awaiting its response, or a raw frame no one waits on.
enum ClientOutbound {
    case call(OutgoingCall)
    case raw(ByteBuffer)
}

/// A request on its way out: its id, the whole frame, and the promise its response completes.
struct OutgoingCall {
    var id: Int64
    var frame: ByteBuffer
    var promise: EventLoopPromise<RPCResponse>
    var timeout: TimeAmount
}

/// Pairs responses with requests by id, fails calls whose time runs out, and hands server
/// notifications to `onNotification`.
final class RPCClientHandler: ChannelDuplexHandler {
    typealias InboundIn = InboundFrame
    typealias OutboundIn = ClientOutbound
    typealias OutboundOut = ByteBuffer

    private var pending: [Int64: (promise: EventLoopPromise<RPCResponse>, timer: Scheduled<Void>)] = [:]
    private let onNotification: @Sendable (RPCNotification) -> Void
    private var closed = false

    init(onNotification: @escaping @Sendable (RPCNotification) -> Void) {
        self.onNotification = onNotification
    }

    /// The calls a connection holds unsent (beyond the kernel's socket buffers) before refusing
    /// more: 8 MiB, taking them again below 4 MiB.
    static let backlogLimit = ChannelOptions.Types.WriteBufferWaterMark(low: 4 << 20, high: 8 << 20)

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let call: OutgoingCall
        switch unwrapOutboundIn(data) {
        case .raw(let buffer):
            context.write(wrapOutboundOut(buffer), promise: promise)
            return
        case .call(let outgoing):
            call = outgoing
        }
        // Past the backlog limit the instance has stopped reading (a peer never does in normal
        // work: it reads while 1,024 of a connection's calls run). Queued, the call would only wait
        // out its budget, holding its bytes, and run late if ever; refused now, it is not sent at
        // all, so the client may send it elsewhere.
        guard !closed else {
            call.promise.fail(RPCError.callNotSent)
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard context.channel.isWritable else {
            call.promise.fail(RPCError.callNotTaken)
            promise?.fail(RPCError.callNotTaken)
            return
        }
        let id = call.id
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let timer = context.eventLoop.scheduleTask(in: call.timeout) {
            let expired = handler.value.pending.removeValue(forKey: id)
            expired?.promise.fail(RPCError.timeout("no answer within the call's time budget"))
        }
        pending[id] = (call.promise, timer)
        // A write that fails never reached the socket (the connection closed first): the server
        // cannot have seen the call, so the client may send it elsewhere, idempotent or not.
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in
            if let entry = handler.value.pending.removeValue(forKey: id) {
                entry.timer.cancel()
                entry.promise.fail(RPCError.callNotSent)
            }
        }
        context.write(wrapOutboundOut(call.frame), promise: written)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .frame(let buffer) = unwrapInboundIn(data) else {
            context.close(promise: nil)
            return
        }
        let frame = Data(buffer.readableBytesView)
        // Aviary servers answer `{"jsonrpc":"2.0","id":<n>,"result":…}`: read the id from those
        // bytes instead of decoding a result that may be large; anything else is decoded in full.
        if let (id, resultOffset) = Self.successLayout(of: buffer.readableBytesView) {
            if let entry = pending.removeValue(forKey: id) {
                entry.timer.cancel()
                entry.promise.succeed(RPCResponse(frame: frame, resultOffset: resultOffset))
            }
            return
        }
        if let (method, paramsOffset) = Self.notificationLayout(of: buffer.readableBytesView) {
            let bytes = buffer.readableBytesView
            let params = bytes[bytes.index(bytes.startIndex, offsetBy: paramsOffset)..<bytes.index(before: bytes.endIndex)]
            onNotification(RPCNotification(method: method, params: RawJSON(unchecked: Array(params))))
            return
        }
        guard let header = try? JSONDecoder().decode(ResponseRoute.self, from: frame) else { return }
        if header.id == nil, let method = header.method {
            let params = (try? JSONDecoder().decode(ResponseHeader.self, from: frame))?.params
            onNotification(RPCNotification(method: method, params: params ?? .null))
            return
        }
        guard let id = header.id?.intValue, let entry = pending.removeValue(forKey: id) else {
            // An error with a null id answers a frame the server could not read at all (for example one
            // over its size limit); every call on this connection is then lost.
            if header.id == nil || header.id == .null, let error = header.error { failAll(error) }
            return
        }
        entry.timer.cancel()
        entry.promise.succeed(RPCResponse(frame: frame))
    }

    private static let notificationPrefix = Array(#"{"jsonrpc":"2.0","method":""#.utf8)
    private static let paramsKey = Array(#"","params":"#.utf8)

    /// The method of a notification written exactly as ``ResponseEncoding`` writes one (a method
    /// name without escapes), and the offset in the frame where its params start; nil for any other
    /// frame. Live events arrive this way, and their params pass through without being parsed.
    static func notificationLayout(of bytes: ByteBufferView) -> (method: String, paramsOffset: Int)? {
        guard bytes.count > notificationPrefix.count + paramsKey.count + 1, bytes.starts(with: notificationPrefix),
            bytes.last == UInt8(ascii: "}")
        else { return nil }
        let methodStart = bytes.index(bytes.startIndex, offsetBy: notificationPrefix.count)
        guard let methodEnd = bytes[methodStart...].firstIndex(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
            bytes[methodEnd] == UInt8(ascii: "\""), bytes[methodEnd...].starts(with: paramsKey)
        else { return nil }
        let method = String(decoding: bytes[methodStart..<methodEnd], as: UTF8.self)
        return (method, bytes.distance(from: bytes.startIndex, to: methodEnd) + paramsKey.count)
    }

    private static let resultPrefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
    private static let resultKey = Array(#","result":"#.utf8)

    /// The integer id of a success response written exactly as ``ResponseEncoding`` writes one, and
    /// the offset in the frame where its result starts; nil for any other frame (an error, a
    /// notification, another server's key order).
    static func successLayout(of bytes: ByteBufferView) -> (id: Int64, resultOffset: Int)? {
        guard bytes.count > resultPrefix.count + resultKey.count + 1, bytes.starts(with: resultPrefix),
            bytes.last == UInt8(ascii: "}")
        else { return nil }
        var index = bytes.index(bytes.startIndex, offsetBy: resultPrefix.count)
        var id: Int64 = 0
        var digits = 0
        while index < bytes.endIndex, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            guard digits < 18 else { return nil }
            id = id * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            digits += 1
            index = bytes.index(after: index)
        }
        guard digits > 0, bytes[index...].starts(with: resultKey) else { return nil }
        return (id, bytes.distance(from: bytes.startIndex, to: index) + resultKey.count)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        failAll(.unavailable("the connection to the service closed before it answered"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func failAll(_ error: RPCError) {
        let calls = pending
        pending = [:]
        for (_, entry) in calls {
            entry.timer.cancel()
            entry.promise.fail(error)
        }
    }
}

extension RPCError {
    /// The call never left this process (its connection was closed first), so sending it on another
    /// connection cannot run it twice.
    static let callNotSent = RPCError.unavailable("the connection to the service closed before the call was sent")

    /// The call was not sent either: its connection held the backlog limit of unsent calls.
    static let callNotTaken = RPCError.unavailable("the service stopped taking calls on its connection; the call was not sent")

    /// The call's budget ran out before a connection to the service was made.
    static let outOfTimeConnecting = RPCError.timeout("the call's time budget ran out while connecting to the service")
}

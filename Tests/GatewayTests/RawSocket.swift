import Foundation
import Locking
import NIOCore
import NIOPosix
import Synchronization
import TestSupport

/// A WebSocket written byte by byte over a plain TCP connection, for what a client library would
/// not send (fragments, binary messages, pings of our choosing) and to read what the gateway sends
/// exactly as it sent it: the upgrade's response, then frames.
final class RawSocket: Sendable {
    struct Frame: Sendable, Equatable {
        let fin: Bool
        let opcode: UInt8
        let payload: [UInt8]

        var text: String { String(decoding: payload, as: UTF8.self) }
        /// The code of a close frame.
        var closeCode: Int? { opcode == 0x8 && payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : nil }
    }

    private final class Reader: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received = Locked<[UInt8]>([])
        let closed = Atomic<Bool>(false)

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            received.withLock { $0.append(contentsOf: buffer.readableBytesView) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            closed.store(true, ordering: .relaxed)
        }
    }

    private let channel: any Channel
    private let reader: Reader
    /// Where the next unread byte is.
    private let position = Locked(0)

    private init(channel: any Channel, reader: Reader) {
        self.channel = channel
        self.reader = reader
    }

    /// Connects to `port` on 127.0.0.1 and sends an upgrade request of `path` with `headers`.
    static func upgrade(port: Int, path: String = "/rpc", headers: [String: String] = [:]) async throws -> RawSocket {
        let reader = Reader()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader) } }
            .connect(host: "127.0.0.1", port: port).get()
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try await channel.writeAndFlush(ByteBuffer(string: request + "\r\n"))
        return RawSocket(channel: channel, reader: reader)
    }

    /// The upgrade's response: its status and everything after the status line (headers and, for a
    /// refusal, the body as far as it arrived).
    func response(timeout: Duration = .seconds(10)) async throws -> (status: Int, rest: String) {
        var found: (Int, String, Int)?
        _ = await eventually(timeout: timeout) {
            let bytes = reader.received.withLock { $0 }
            guard let end = Self.range(of: Array("\r\n\r\n".utf8), in: bytes) else { return false }
            let head = String(decoding: bytes[..<end], as: UTF8.self)
            guard let status = head.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return false }
            // A refusal's body follows its head and the connection closes: wait for both.
            guard status == 101 || reader.closed.load(ordering: .relaxed) else { return false }
            let all = String(decoding: bytes, as: UTF8.self)
            let rest = all.range(of: "\r\n").map { String(all[$0.upperBound...]) } ?? ""
            found = (status, rest, end + 4)
            return true
        }
        guard let (status, rest, consumed) = found else { throw EdgeTestError("no upgrade response within \(timeout)") }
        position.withLock { $0 = consumed }
        return (status, rest)
    }

    /// Sends one frame, masked as a client's must be.
    func send(opcode: UInt8, fin: Bool = true, _ payload: [UInt8]) async throws {
        try await channel.writeAndFlush(Self.maskedFrame(opcode: opcode, fin: fin, payload))
    }

    /// A client's frame of `opcode` (text 0x1, ping 0x9, …), masked (with a fixed key here).
    static func maskedFrame(opcode: UInt8, fin: Bool = true, _ payload: [UInt8]) -> ByteBuffer {
        let key: [UInt8] = [7, 1, 9, 3]
        var frame = ByteBuffer()
        frame.writeInteger(UInt8((fin ? 0x80 : 0) | opcode))
        if payload.count < 126 {
            frame.writeInteger(UInt8(0x80 | payload.count))
        } else {
            frame.writeInteger(UInt8(0x80 | 126))
            frame.writeInteger(UInt16(payload.count))
        }
        frame.writeBytes(key)
        frame.writeBytes(payload.enumerated().map { $0.element ^ key[$0.offset % 4] })
        return frame
    }

    func send(opcode: UInt8, fin: Bool = true, _ text: String) async throws {
        try await send(opcode: opcode, fin: fin, Array(text.utf8))
    }

    /// The next frame the gateway sent, waiting up to `timeout`.
    func next(timeout: Duration = .seconds(10)) async throws -> Frame {
        var frame: Frame?
        _ = await eventually(timeout: timeout) {
            let bytes = reader.received.withLock { $0 }
            let start = position.withLock { $0 }
            guard let (parsed, length) = Self.frame(in: bytes[start...]) else { return false }
            position.withLock { $0 = start + length }
            frame = parsed
            return true
        }
        guard let frame else { throw EdgeTestError("no frame within \(timeout)") }
        return frame
    }

    /// Whether the gateway closed the connection, waiting up to `timeout`.
    func closed(timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(timeout: timeout) { reader.closed.load(ordering: .relaxed) }
    }

    func close() async {
        try? await channel.close()
    }

    /// A server's frame (unmasked) at the start of `bytes`, and its length; nil until all of it arrived.
    private static func frame(in bytes: ArraySlice<UInt8>) -> (Frame, Int)? {
        let base = bytes.startIndex
        guard bytes.count >= 2 else { return nil }
        let first = bytes[base]
        var length = Int(bytes[base + 1] & 0x7f)
        var header = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[base + 2]) << 8 | Int(bytes[base + 3])
            header = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(bytes[base + $1]) }
            header = 10
        }
        guard bytes.count >= header + length else { return nil }
        let payload = Array(bytes[(base + header)..<(base + header + length)])
        return (Frame(fin: first & 0x80 != 0, opcode: first & 0x0f, payload: payload), header + length)
    }

    private static func range(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

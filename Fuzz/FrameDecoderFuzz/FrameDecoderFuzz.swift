import FuzzSupport
import NIOCore
import NIOEmbedded
import RPC

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FrameDecoderFuzz.check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// Fuzzes the RPC frame decoder (`NewlineFrameDecoder`) in an `EmbeddedChannel`: arbitrary bytes,
/// split into reads at arbitrary points, with time passing between reads, must give exactly the
/// frames, refusals and timeouts that `ReferenceSplitter` (the rules of the decoder's doc comment,
/// written the plain way) gives, and never a frame over the limit (bar the last, see there).
///
/// Input: byte 0 picks the limit (bits 0-4: 1 to 32 bytes, or 4096 with bit 5) and whether frames
/// have a timeout (bit 6); the low four bits of byte 1 say how many control bytes follow. Each
/// control byte is one read: bits 0-5 its length, bits 6-7 the ticks (half the timeout each) that
/// pass before it. The rest is the byte stream; what the reads leave of it is the last read.
@main
enum FrameDecoderFuzz {
    static func main() {
        FuzzMain.run(fuzzTestOneInput)
    }

    static let tick = TimeAmount.milliseconds(1)
    static let timeoutTicks: Int64 = 2

    static func check(_ input: [UInt8]) {
        guard input.count >= 2 else { return }
        let maxFrameBytes = input[0] & 0x20 != 0 ? 4096 : Int(input[0] & 0x1F) + 1
        let timeout = input[0] & 0x40 != 0
        let controls = min(Int(input[1] & 0x0F), input.count - 2)
        var stream = input[(2 + controls)...]
        var reads: [(ticks: Int64, bytes: ArraySlice<UInt8>)] = []
        for control in input[2..<(2 + controls)] {
            let length = min(Int(control & 0x3F), stream.count)
            reads.append((Int64(control >> 6), stream.prefix(length)))
            stream = stream.dropFirst(length)
        }
        reads.append((0, stream))

        var reference = ReferenceSplitter(maxFrameBytes: maxFrameBytes, timeoutTicks: timeout ? timeoutTicks : nil)
        let decoder = NewlineFrameDecoder(maxFrameBytes: maxFrameBytes, frameTimeout: timeout ? tick * timeoutTicks : nil)
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(decoder))
        var seen: [Event] = []
        do {
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            for (ticks, bytes) in reads {
                for _ in 0..<ticks {
                    channel.embeddedEventLoop.advanceTime(by: tick)
                    reference.advance(ticks: 1)
                }
                try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
                reference.read(bytes)
                try drain(channel, into: &seen)
            }
            try channel.close().wait()
            reference.end()
            try drain(channel, into: &seen)
            _ = try channel.finish(acceptAlreadyClosed: true)
        } catch {
            fatalError("the channel failed: \(error)")
        }

        guard seen == reference.events else {
            fatalError("""
                the decoder and the reference differ (limit \(maxFrameBytes), timeout \(timeout), \
                reads \(reads.map { "\($0.ticks)t+\($0.bytes.count)" }))
                decoder:   \(seen)
                reference: \(reference.events)
                """)
        }
        // Only the last frame, cut by the end of the stream, may have the one byte more that a
        // frame's `\r` is allowed.
        for (index, event) in seen.enumerated() {
            if case .frame(let bytes) = event {
                let last = index == seen.count - 1 && reference.endedWithFrame
                precondition(bytes.count <= maxFrameBytes + (last ? 1 : 0), "a frame over the limit: \(bytes.count)")
                precondition(!bytes.isEmpty && (last || !bytes.contains(0x0A)), "an empty frame or one with a newline")
            }
        }
    }

    static func drain(_ channel: EmbeddedChannel, into events: inout [Event]) throws {
        while let frame = try channel.readInbound(as: InboundFrame.self) {
            switch frame {
            case .frame(let buffer): events.append(.frame(Array(buffer.readableBytesView)))
            case .tooLarge(let limit): events.append(.tooLarge(limit: limit))
            case .tooSlow(let timeout): events.append(.tooSlow(ticks: timeout.nanoseconds / tick.nanoseconds))
            }
        }
    }
}

enum Event: Equatable, CustomStringConvertible {
    case frame([UInt8])
    case tooLarge(limit: Int)
    case tooSlow(ticks: Int64)

    var description: String {
        switch self {
        case .frame(let bytes): "frame(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .tooLarge(let limit): "tooLarge(\(limit))"
        case .tooSlow(let ticks): "tooSlow(\(ticks)t)"
        }
    }
}

/// The decoder's rules, one byte stream at a time:
/// - a frame ends at `\n`, and one `\r` before it is dropped; empty frames are skipped;
/// - a frame over `maxFrameBytes` is refused (`tooLarge`), and so is one that has not ended after
///   `maxFrameBytes + 1` bytes (the one more may be the `\r` of its `\r\n`); after a refusal
///   nothing more is read;
/// - with a timeout, a frame not ended `timeoutTicks` after its first byte came is reported once
///   (`tooSlow`); reading goes on, as the server closes the connection;
/// - at the end of the stream, what is left is a last frame as it is (its `\r` kept; at most
///   `maxFrameBytes + 1` bytes, as more would have been refused already).
struct ReferenceSplitter {
    let maxFrameBytes: Int
    let timeoutTicks: Int64?
    private(set) var events: [Event] = []
    private(set) var endedWithFrame = false
    private var pending: [UInt8] = []
    private var failed = false
    private var now: Int64 = 0
    /// When the frame being read began, while its deadline is set; whether that deadline passed.
    private var frameStart: Int64?
    private var reportedSlow = false

    init(maxFrameBytes: Int, timeoutTicks: Int64?) {
        self.maxFrameBytes = maxFrameBytes
        self.timeoutTicks = timeoutTicks
    }

    mutating func advance(ticks: Int64) {
        now += ticks
        if let frameStart, let timeoutTicks, !reportedSlow, now >= frameStart + timeoutTicks {
            reportedSlow = true
            events.append(.tooSlow(ticks: timeoutTicks))
        }
    }

    mutating func read(_ bytes: ArraySlice<UInt8>) {
        guard !failed else { return }
        pending += bytes
        while !failed {
            guard let newline = pending.firstIndex(of: 0x0A) else {
                if pending.count > maxFrameBytes + 1 {
                    fail()
                } else if !pending.isEmpty, frameStart == nil, timeoutTicks != nil {
                    frameStart = now
                    reportedSlow = false
                }
                return
            }
            var line = Array(pending[..<newline])
            pending.removeFirst(newline + 1)
            frameStart = nil
            guard line.count <= maxFrameBytes + 1 else { return fail() }
            if line.last == 0x0D { line.removeLast() }
            guard !line.isEmpty else { continue }
            guard line.count <= maxFrameBytes else { return fail() }
            events.append(.frame(line))
        }
    }

    mutating func end() {
        frameStart = nil
        if !failed, !pending.isEmpty {
            events.append(.frame(pending))
            endedWithFrame = true
        }
        pending = []
    }

    private mutating func fail() {
        failed = true
        frameStart = nil
        pending = []
        events.append(.tooLarge(limit: maxFrameBytes))
    }
}

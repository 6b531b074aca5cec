import Foundation

/// A bare TCP client that writes bytes as given and reads newline-terminated frames, for tests
/// of the wire protocol itself (malformed frames, split packets, what is not answered).
public final class RPCLineClient: @unchecked Sendable {
    // Only the test that created it uses it, from one task at a time.
    private let socket: Int32
    private var buffer: [UInt8] = []

    public init(host: String = "127.0.0.1", port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(socket)
            throw POSIXError(.ECONNREFUSED)
        }
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(socket) }

    /// Ends the connection both ways now (the socket itself is closed with the client).
    public func hangUp() {
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw POSIXError(.EPIPE) }
            offset += written
        }
    }

    /// The next frame, or nil when the server closed the connection or nothing came within `timeout`.
    /// It polls without blocking, so a test's read never holds a thread the server needs.
    public func readFrame(timeout: Duration = .seconds(5)) async -> String? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let frame = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return frame
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else {
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// The next frame parsed as JSON.
    public func readJSON(timeout: Duration = .seconds(5)) async -> Any? {
        guard let frame = await readFrame(timeout: timeout) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(frame.utf8), options: [.fragmentsAllowed])
    }

    /// True once the server has closed its side (a read returns end of file).
    public func isClosedByPeer(within timeout: Duration = .seconds(2)) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else {
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return true }
            buffer.append(contentsOf: chunk[..<count])
        }
        return false
    }
}

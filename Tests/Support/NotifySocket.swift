import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Unix datagram socket standing in for systemd's notification socket (`NOTIFY_SOCKET`), for
/// tests of `sd_notify` messages, in-process or from a service executable. Only one task reads it
/// at a time (`@unchecked Sendable`: the descriptor is used by `recv` alone, which is thread-safe).
public final class NotifySocket: @unchecked Sendable {
    /// The `NOTIFY_SOCKET` value: a path, or `@name` for an abstract socket.
    public let address: String
    private let descriptor: Int32
    private let path: String?

    /// Binds a socket file in a fresh temporary folder, or an abstract name when `abstract`.
    public init(abstract: Bool = false) throws {
        let name = "aviary-\(UUID().uuidString.prefix(8))"
        if abstract {
            self.path = nil
            self.address = "@\(name)"
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            self.path = folder + "/notify.sock"
            self.address = self.path!
        }
        #if os(Linux)
        self.descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        self.descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(self.address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let result = withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(self.descriptor, $0, socklen_t(length)) }
        }
        guard self.descriptor >= 0 && result == 0 else { throw TestSupportError("bind failed: errno \(errno)") }
    }

    deinit {
        close(self.descriptor)
        if let path { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    }

    /// The next datagram, polling without blocking a thread; nil after `timeout`.
    public func receive(timeout: Duration = .seconds(5)) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let count = recv(self.descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count >= 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }
}

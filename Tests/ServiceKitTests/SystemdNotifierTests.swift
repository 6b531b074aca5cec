import Foundation
import Logging
import ServiceKit
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("SystemdNotifier", .timeLimit(.minutes(1)))
struct SystemdNotifierTests {
    /// A Unix datagram socket standing in for systemd's notification socket.
    final class NotifySocket {
        let address: String
        private let descriptor: Int32
        private let path: String?

        /// Binds a socket file in a fresh temporary folder, or an abstract name when `abstract`.
        init(abstract: Bool = false) throws {
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
            try #require(self.descriptor >= 0 && result == 0, "bind failed: errno \(errno)")
        }

        deinit {
            close(self.descriptor)
            if let path { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        }

        /// The next datagram, polling without blocking a thread; nil after `timeout`.
        func receive(timeout: Duration = .seconds(5)) async throws -> String? {
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

    static let logger = Logger(label: "systemd-test") { _ in SwiftLogNoOpLogHandler() }

    @Test func sendsDatagramsToASocketPath() async throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address])
        #expect(notifier.socketPath == socket.address)
        try notifier.notify("READY=1")
        try notifier.notify("STATUS=Serving on 127.0.0.1:7101")
        try notifier.notify("STOPPING=1")
        #expect(try await socket.receive() == "READY=1")
        #expect(try await socket.receive() == "STATUS=Serving on 127.0.0.1:7101")
        #expect(try await socket.receive() == "STOPPING=1")
    }

    #if os(Linux)
    @Test func sendsDatagramsToAnAbstractSocket() async throws {
        let socket = try NotifySocket(abstract: true)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address])
        try notifier.notify("READY=1\nSTATUS=up")
        #expect(try await socket.receive() == "READY=1\nSTATUS=up")
    }
    #endif

    @Test func doesNothingWithoutNotifySocket() async throws {
        let notifier = SystemdNotifier(environment: ["WATCHDOG_USEC": "1000"])
        #expect(notifier.socketPath == nil)
        #expect(notifier.watchdogInterval == nil)
        try notifier.notify("READY=1")
        await notifier.runWatchdog(logger: Self.logger)  // returns at once
    }

    @Test func reportsAnUnreachableSocket() throws {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify.sock"])
        #expect(throws: SystemdNotifierError.self) { try notifier.notify("READY=1") }
        let relative = SystemdNotifier(environment: ["NOTIFY_SOCKET": "vsock:2:1234"])
        #expect(throws: SystemdNotifierError.self) { try relative.notify("READY=1") }
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUsec() {
        let pid = String(getpid())
        #expect(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "30000000"]).watchdogInterval
                == .seconds(15))
        #expect(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "100000", "WATCHDOG_PID": pid])
                .watchdogInterval == .milliseconds(50))
        #expect(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"])
                .watchdogInterval == nil, "pings are for another process")
        #expect(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "soon"]).watchdogInterval == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x"]).watchdogInterval == nil)
    }

    @Test func watchdogPingsUntilCancelled() async throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "40000"])
        let started = ContinuousClock.now
        let watchdog = Task { await notifier.runWatchdog(logger: Self.logger) }
        for _ in 0..<3 {
            #expect(try await socket.receive() == "WATCHDOG=1")
        }
        // Three pings 20 ms apart: the first at once, then two intervals.
        #expect(ContinuousClock.now - started >= .milliseconds(40))
        watchdog.cancel()
        await watchdog.value
        while try await socket.receive(timeout: .milliseconds(50)) != nil {}
        #expect(try await socket.receive(timeout: .milliseconds(100)) == nil, "no pings after cancellation")
    }
}

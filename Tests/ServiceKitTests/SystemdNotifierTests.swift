import Foundation
import Logging
import ServiceKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("SystemdNotifier", .timeLimit(.minutes(1)))
struct SystemdNotifierTests {
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

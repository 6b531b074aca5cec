import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Talks to systemd's service manager with the `sd_notify` datagram protocol, over the Unix socket
/// named by `$NOTIFY_SOCKET` (a path, or `@name` for an abstract socket).
///
/// Every method is a no-op when the process was not started by systemd (no `NOTIFY_SOCKET`), so
/// services call them unconditionally: `try notifier.notify("READY=1")` once listening,
/// `"STOPPING=1"` on shutdown, `"STATUS=…"` for `systemctl status`, and ``runWatchdog(logger:)``
/// in a task for `WatchdogSec=`.
public struct SystemdNotifier: Sendable {
    /// The socket address from `$NOTIFY_SOCKET`; nil when unset, and then nothing is ever sent.
    public let socketPath: String?
    /// Half of `$WATCHDOG_USEC`, when systemd expects keep-alive pings from this process.
    public let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let pingsAreForUs = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if self.socketPath != nil, pingsAreForUs,
            let microseconds = environment["WATCHDOG_USEC"].flatMap({ Int64($0) }), microseconds > 0
        {
            self.watchdogInterval = .microseconds(microseconds / 2)
        } else {
            self.watchdogInterval = nil
        }
    }

    /// Sends one notification: newline-separated `KEY=VALUE` assignments such as `READY=1`,
    /// `STOPPING=1`, `WATCHDOG=1` or `STATUS=Serving 12 connections`.
    /// - Throws: ``SystemdNotifierError`` when the socket cannot be reached.
    public func notify(_ state: String) throws {
        guard let socketPath else { return }
        try Self.send(Array(state.utf8), to: socketPath)
    }

    /// Sends `WATCHDOG=1` every ``watchdogInterval`` until the task is cancelled; returns at once when
    /// systemd asked for no watchdog. A failed ping is logged and the loop goes on.
    public func runWatchdog(logger: Logger) async {
        guard let interval = self.watchdogInterval else { return }
        while !Task.isCancelled {
            do {
                try self.notify("WATCHDOG=1")
            } catch {
                logger.warning("systemd watchdog ping failed", metadata: ["error": "\(error)"])
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}

extension SystemdNotifier {
    /// One datagram on a fresh socket, as `sd_notify(3)` does: there is no connection to keep.
    private static func send(_ message: [UInt8], to socketPath: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let isAbstract = pathBytes.first == UInt8(ascii: "@")
        if isAbstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A filesystem path needs room for its terminating NUL; an abstract name does not.
        guard pathBytes.count + (isAbstract ? 0 : 1) <= capacity, pathBytes.count > 1 || !isAbstract,
            isAbstract || pathBytes.first == UInt8(ascii: "/")
        else {
            throw SystemdNotifierError(
                operation: "NOTIFY_SOCKET '\(socketPath)' is not a supported address", code: EINVAL)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length =
            MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + pathBytes.count + (isAbstract ? 0 : 1)

        #if os(Linux)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else {
            throw SystemdNotifierError(operation: "socket", code: errno)
        }
        defer { close(descriptor) }

        let sent = message.withUnsafeBytes { body in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(descriptor, body.baseAddress, body.count, 0, socketAddress, socklen_t(length))
                }
            }
        }
        guard sent == message.count else {
            throw SystemdNotifierError(operation: "sendto \(socketPath)", code: sent < 0 ? errno : EMSGSIZE)
        }
    }
}

/// A notification that could not be delivered to `$NOTIFY_SOCKET`.
public struct SystemdNotifierError: Error, Sendable, CustomStringConvertible {
    /// What was attempted.
    public var operation: String
    /// The `errno` it failed with.
    public var code: Int32

    public var description: String {
        "systemd notification failed: \(self.operation): \(String(cString: strerror(self.code)))"
    }
}

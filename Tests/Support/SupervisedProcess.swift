import Foundation
import Locking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A long-running server started under the `Watchdog` script. `pid` is the server itself (signals go
/// there); the exit status is the server's, relayed by the watchdog.
final class SupervisedProcess: Sendable {
    let pid: Int32
    private let watchdog: ChildProcess
    private let ending: Ending

    /// Starts `command` with its output appended to `log`. `stopSignal` is what the watchdog sends
    /// when the test process ends; `cleanup` is the folder it then removes (nil: keep it).
    init(
        _ command: [String], log: String, pidFile: String, stopSignal: Int32, cleanup: String?,
        environment: [String: String]? = nil, directory: String? = nil
    ) async throws {
        try? FileManager.default.removeItem(atPath: pidFile)
        let cleanupFolder = TemporaryFolder.keepAfterTests ? "" : (cleanup ?? "")
        let watchdogArguments = [
            "/bin/sh", "-c", Watchdog.script, "aviary-watchdog",
            String(getpid()), String(stopSignal), pidFile, cleanupFolder,
        ]
        let ending = Ending(folder: cleanupFolder)
        let watchdog = try ChildProcess(
            watchdogArguments + command, environment: environment, directory: directory,
            output: log, onExit: ending.watchdogEnded)
        var serverPID: Int32?
        _ = await eventually(timeout: .seconds(10), interval: .milliseconds(5)) {
            serverPID = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            return serverPID != nil || watchdog.status != nil
        }
        guard let serverPID else {
            kill(watchdog.pid, SIGKILL)
            throw TestSupportError("the watchdog for \(command[0]) did not start it; see \(log)")
        }
        self.pid = serverPID
        self.watchdog = watchdog
        self.ending = ending
    }

    /// The server's exit status, or nil while it runs.
    var status: Int32? { watchdog.status }

    func signal(_ signal: Int32) {
        if status == nil { kill(pid, signal) }
    }

    func waitForExit(timeout: Duration) async -> Int32? {
        await watchdog.waitForExit(timeout: timeout)
    }

    /// Sends `signal`, then SIGKILL if the server has not ended after `timeout`.
    func stop(signal: Int32, timeout: Duration) async -> Int32? {
        self.signal(signal)
        if let status = await waitForExit(timeout: timeout) { return status }
        self.signal(SIGKILL)
        return await waitForExit(timeout: .seconds(10))
    }

    /// Tells the watchdog the tests are over: it stops the server and removes its folder, on its own
    /// time, so this returns at once (it runs from `atexit` and `deinit`). A watchdog that has
    /// already ended, because the server did (a test killed it), can no longer remove the folder:
    /// then it goes now, or as soon as the watchdog's end is recorded.
    func finish() {
        if ending.finish(watchdogEnded: watchdog.status != nil) { kill(watchdog.pid, SIGTERM) }
    }
}

/// Removes the folder once both the tests are done with the server and its watchdog has ended,
/// whichever is known last; the watchdog removes it too when it stopped the server itself.
private final class Ending: Sendable {
    private struct State {
        var finishing = false
        var watchdogEnded = false
    }

    private let folder: String
    private let state = Locked(State())

    init(folder: String) {
        self.folder = folder
    }

    /// Records that the tests are done; returns whether the watchdog still runs to stop the server.
    /// `watchdogEnded`: it is known to have ended, though its end may not be recorded yet.
    func finish(watchdogEnded ended: Bool) -> Bool {
        let ended = state.withLock { state in
            state.finishing = true
            return state.watchdogEnded || ended
        }
        if ended { removeFolder() }
        return !ended
    }

    @Sendable func watchdogEnded() {
        let finishing = state.withLock { state in
            state.watchdogEnded = true
            return state.finishing
        }
        if finishing { removeFolder() }
    }

    private func removeFolder() {
        if !folder.isEmpty { try? FileManager.default.removeItem(atPath: folder) }
    }
}

import Foundation
import Locking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with Foundation's `Process`, whose end can be awaited without blocking a
/// thread. Its exit status follows the shell's convention: the exit code, or 128 + the signal number.
final class ChildProcess: Sendable {
    let pid: Int32
    private let exit: ExitStatus
    /// Kept so that Foundation's bookkeeping for the child lives as long as we watch it.
    private let process: Process

    /// Starts `arguments[0]` (a path) with the rest as its arguments; stdout and stderr are appended to
    /// the file `output`, or go to /dev/null. `onExit` runs, on a thread of Foundation's, once the
    /// status is recorded.
    init(
        _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        output: String? = nil, onExit: (@Sendable () -> Void)? = nil
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var handle: FileHandle?
        if let output {
            let fd = open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw TestSupportError("cannot open \(output): \(String(cString: strerror(errno)))")
            }
            handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        }
        // The child gets its own copy of the descriptor; ours is closed once it runs.
        defer { try? handle?.close() }
        process.standardOutput = handle
        process.standardError = handle
        let exit = ExitStatus()
        process.terminationHandler = {
            exit.record($0)
            onExit?()
        }
        do {
            try withSignalsUnblocked { try process.run() }
        } catch {
            throw TestSupportError("cannot start \(arguments[0]): \(error)")
        }
        self.pid = process.processIdentifier
        self.exit = exit
        self.process = process
    }

    /// The exit status, or nil while the process runs.
    ///
    /// Foundation learns that a child ended only once every copy of a socket it hands the child is
    /// closed, and a process that another thread starts at the same moment can inherit a copy and
    /// hold it for as long as it runs (seen in CI: a service that exited at once on a bad setting
    /// counted as running for 25 s). So an ended child that is not yet reaped (a zombie) is read
    /// from `/proc`, without reaping it. A status read there is kept: once Foundation reaps the child,
    /// `/proc` no longer has it, and the termination handler may not have recorded it yet (seen in
    /// CI: a `psql` that had ended was reported as still running after it was seen to end).
    var status: Int32? {
        exit.value.withLock { recorded in
            if recorded == nil { recorded = Self.zombieStatus(of: pid) }
            return recorded
        }
    }

    /// The exit status of `pid` if it is a zombie, from `/proc/<pid>/stat` (state, field 3, and the
    /// status as `waitpid` reports it, field 52); nil otherwise.
    static func zombieStatus(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 49, fields[0] == "Z", let code = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines))
        else { return nil }
        let signal = code & 0x7f
        return signal == 0 ? (code >> 8) & 0xff : 128 + signal
    }

    /// Waits for the end of the process; nil when it still runs after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32? {
        _ = await eventually(timeout: timeout, interval: .milliseconds(20)) { status != nil }
        return status
    }
}

/// Where the termination handler, which runs on a thread of Foundation's, leaves the exit status.
private final class ExitStatus: Sendable {
    let value = Locked<Int32?>(nil)

    func record(_ process: Process) {
        let code = process.terminationStatus
        value.withLock { $0 = process.terminationReason == .uncaughtSignal ? 128 + code : code }
    }
}

/// Runs `body` with no signal blocked on this thread. A child inherits the signal mask of the thread
/// that spawns it, and the threads Swift concurrency runs on block SIGTERM and SIGINT (among others):
/// a server spawned from one would never see them, unless it clears its mask itself as Postgres does.
private func withSignalsUnblocked<T>(_ body: () throws -> T) rethrows -> T {
    var none = sigset_t()
    var previous = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    return try body()
}

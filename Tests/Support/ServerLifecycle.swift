import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starts and stops one test server (Postgres or Redis) that keeps its folder, port and data from one
/// run to the next. The folder goes away with the last reference to this object.
actor ServerLifecycle {
    let name: String
    let folder: TemporaryFolder
    private let command: [String]
    private let stopSignal: Int32
    private let isReady: @Sendable () async -> Bool
    private let cleanupToken: Int
    private var server: SupervisedProcess?

    /// `stopSignal` stops the server quickly but cleanly (SIGINT is Postgres' fast shutdown).
    init(
        name: String, command: [String], folder: TemporaryFolder, cleanupToken: Int,
        stopSignal: Int32, isReady: @escaping @Sendable () async -> Bool
    ) {
        self.name = name
        self.command = command
        self.folder = folder
        self.cleanupToken = cleanupToken
        self.stopSignal = stopSignal
        self.isReady = isReady
    }

    deinit {
        ExitCleanup.release(cleanupToken)
    }

    var log: String { folder.file("\(name).log") }

    /// Whether the server has been started and not stopped since.
    var isRunning: Bool { server != nil }

    /// Starts the server and waits until it answers; does nothing when it already runs.
    func start() async throws {
        guard server == nil else { return }
        let server = try await SupervisedProcess(
            command, log: log, pidFile: folder.file("\(name).pid"), stopSignal: stopSignal,
            cleanup: folder.path, directory: folder.path)
        self.server = server
        ExitCleanup.setServer(server, for: cleanupToken)
        let isReady = self.isReady
        let answered = await eventually(timeout: .seconds(60), interval: .milliseconds(50)) {
            if server.status != nil { return true }
            return await isReady()
        }
        if answered, server.status == nil { return }
        let status = await server.stop(signal: SIGKILL, timeout: .seconds(5))
        forget()
        let outcome =
            answered
            ? "exited with status \(status.map(String.init) ?? "?")" : "did not answer in 60 s"
        throw TestSupportError("\(name) \(outcome)\n\(logTail(log))")
    }

    /// Sends `signal` to the running server and to the processes it started (Postgres' backends, each
    /// in a session of its own): SIGSTOP and SIGCONT stall the whole server and let it go on.
    func signal(_ signal: Int32) {
        guard let server else { return }
        server.signal(signal)
        for child in Self.children(of: server.pid) { kill(child, signal) }
    }

    /// The processes whose parent is `parent`, from each one's `/proc/<pid>/stat` (the parent's pid is
    /// the second field after the command name, which is in parentheses and may hold spaces).
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// Stops the server (quickly, but cleanly) and waits until it has exited.
    func stop() async throws {
        guard let server else { return }
        let status = await server.stop(signal: stopSignal, timeout: .seconds(30))
        forget()
        if status == nil {
            throw TestSupportError("\(name) (pid \(server.pid)) did not exit\n\(logTail(log))")
        }
    }

    private func forget() {
        server = nil
        ExitCleanup.setServer(nil, for: cleanupToken)
    }
}

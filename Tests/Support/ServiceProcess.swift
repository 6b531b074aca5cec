import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One Aviary executable (`aviary-auth`, …) from this build, running as a child of the test process
/// for multi-process tests. Its output goes to a log file in a temporary folder. It ends when the test
/// ends it, when the last reference to this object goes away, or when the test process exits or dies;
/// the log goes away with the object (`AVIARY_TEST_KEEP_FOLDERS=1` keeps it).
public final class ServiceProcess: Sendable {
    /// The executable's name, as passed to `start`.
    public let executable: String
    /// The service's own process id.
    public let pid: Int32
    /// The address its listeners bound (a probe of 0.0.0.0 goes to 127.0.0.1).
    public let host: String
    /// The JSON-RPC port.
    public let rpcPort: Int
    /// The HTTP admin port (`/healthz`, `/readyz`, `/metrics`).
    public let adminPort: Int
    /// Where stdout and stderr go.
    public let logFile: String
    private let process: SupervisedProcess
    private let cleanupToken: Int

    /// "host:port" of the JSON-RPC listener, as the `AVIARY_<SERVICE>_ADDRESSES` variables take it.
    public var rpcAddress: String { "\(host):\(rpcPort)" }

    private init(
        executable: String, process: SupervisedProcess, host: String, ports: ServicePorts,
        logFile: String, cleanupToken: Int
    ) {
        self.executable = executable
        self.pid = process.pid
        self.host = host
        self.rpcPort = ports.rpc
        self.adminPort = ports.admin
        self.logFile = logFile
        self.process = process
        self.cleanupToken = cleanupToken
    }

    deinit {
        ExitCleanup.release(cleanupToken)
    }

    /// Starts `executable` with `environment` added to this process' own, minus every `AVIARY_*`
    /// variable of ours, and waits until `GET /readyz` on its admin port answers 200.
    ///
    /// The ports come from `AVIARY_RPC_PORT`/`AVIARY_ADMIN_PORT` when set and not 0, otherwise from the
    /// line the service logs once it listens (`rpc=HOST:PORT admin=HOST:PORT`).
    /// With `fileDescriptorLimit`, the service starts under those soft and hard `RLIMIT_NOFILE`
    /// limits (util-linux's `prlimit` sets them and execs it, so `pid` is still the service's).
    public static func start(
        executable: String, environment: [String: String], arguments: [String] = [],
        fileDescriptorLimit: (soft: Int, hard: Int)? = nil, readyTimeout: Duration = .seconds(60)
    ) async throws -> ServiceProcess {
        let path = try BuildProducts.executable(named: executable)
        let launcher = fileDescriptorLimit.map { ["/usr/bin/prlimit", "--nofile=\($0.soft):\($0.hard)", "--"] } ?? []
        let folder = try TemporaryFolder.create(
            executable.hasPrefix("aviary-") ? String(executable.dropFirst(7)) : executable)
        let cleanupToken = ExitCleanup.register(folder)
        let logFile = folder.file("\(executable).log")
        var fullEnvironment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("AVIARY_")
        }
        fullEnvironment.merge(environment) { _, given in given }
        let process: SupervisedProcess
        do {
            process = try await SupervisedProcess(
                launcher + [path] + arguments, log: logFile, pidFile: folder.file("\(executable).pid"),
                stopSignal: SIGTERM, cleanup: folder.path, environment: fullEnvironment,
                directory: folder.path)
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
        ExitCleanup.setServer(process, for: cleanupToken)

        var ports: ServicePorts?
        let host = probeHost(environment["AVIARY_HOST"] ?? "127.0.0.1")
        let settled = await eventually(timeout: readyTimeout, interval: .milliseconds(50)) {
            if process.status != nil { return true }
            ports = ports ?? ServicePorts(environment: environment, log: logFile)
            guard let ports else { return false }
            let readyz = try? AdminHTTP.get(
                "/readyz", host: host, port: ports.admin, timeout: .seconds(1))
            return readyz?.status == 200
        }
        if settled, process.status == nil, let ports {
            return ServiceProcess(
                executable: executable, process: process, host: host, ports: ports,
                logFile: logFile, cleanupToken: cleanupToken)
        }
        let status = await process.stop(signal: SIGKILL, timeout: .seconds(5))
        let tail = logTail(logFile)
        ExitCleanup.release(cleanupToken)
        if settled, let status {
            throw TestSupportError(
                "\(executable) exited with status \(status) before it was ready\n\(tail)")
        }
        let waitingFor = ports == nil ? "its `rpc=… admin=…` log line" : "GET /readyz = 200"
        throw TestSupportError(
            "\(executable) not ready within \(readyTimeout) (waited for \(waitingFor))\n\(tail)")
    }

    /// Sends SIGTERM: a graceful shutdown.
    public func terminate() {
        process.signal(SIGTERM)
    }

    /// Sends SIGKILL.
    public func kill() {
        process.signal(SIGKILL)
    }

    /// Waits for the process to end: its exit code, 128 + the signal number if a signal ended it, or
    /// nil if it still runs after `timeout`.
    public func waitForExit(timeout: Duration = .seconds(30)) async -> Int32? {
        await process.waitForExit(timeout: timeout)
    }

    /// Everything the service printed so far.
    public func logText() -> String {
        (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
    }

    /// The address to probe for a listener bound to `host`.
    static func probeHost(_ host: String) -> String {
        host == "0.0.0.0" || host.isEmpty ? "127.0.0.1" : host
    }
}

extension ServiceProcess {
    /// The value of the line of the process's metrics that starts with `prefix` (0 when there is none).
    public func metric(_ prefix: String) throws -> Int {
        Int(try metricValue(prefix) ?? 0)
    }

    /// The value of the line of the process's metrics that starts with `prefix`; nil when there is none.
    public func metricValue(_ prefix: String) throws -> Double? {
        prometheusValue(prefix, in: try AdminHTTP.get("/metrics", port: adminPort).body)
    }
}

/// The value of the first line of Prometheus text `metrics` that starts with `prefix`; nil when
/// there is none.
public func prometheusValue(_ prefix: String, in metrics: String) -> Double? {
    let line = metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }
    return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
}

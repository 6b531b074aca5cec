import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A short-lived tool run to completion (initdb, psql, pg_isready, redis-cli, a client script),
/// output captured.
public struct Command: Sendable {
    public var arguments: [String]
    public var environment: [String: String]? = nil
    public var directory: String? = nil

    public init(arguments: [String], environment: [String: String]? = nil, directory: String? = nil) {
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
    }

    /// What a finished command printed (stdout and stderr together) and its exit status.
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
    }

    /// Runs the command; a command still running after `timeout` is killed and reported as failed.
    public func run(timeout: Duration = .seconds(60)) async throws -> Result {
        let capture = try TemporaryFolder.create("command")
        defer { try? FileManager.default.removeItem(atPath: capture.path) }
        let outputFile = capture.file("output")
        let child = try ChildProcess(
            arguments, environment: environment, directory: directory, output: outputFile)
        guard let status = await child.waitForExit(timeout: timeout) else {
            kill(child.pid, SIGKILL)
            throw TestSupportError("\(describe()) did not finish within \(timeout)")
        }
        let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return Result(
            status: status, output: output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Runs the command and returns its output; a non-zero exit status is an error that shows it.
    public func output(timeout: Duration = .seconds(60)) async throws -> String {
        let result = try await run(timeout: timeout)
        guard result.status == 0 else {
            throw TestSupportError(
                "\(describe()) failed with status \(result.status):\n\(result.output)")
        }
        return result.output
    }

    public func describe() -> String {
        arguments.map { $0.isEmpty || $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }
}

/// The full path of a program: in `$PATH`, then in the usual system folders.
public func findExecutable(_ name: String) -> String? {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let folders =
        searchPath.split(separator: ":").map(String.init) + [
            "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin",
        ]
    return folders.map { $0 + "/" + name }.first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}

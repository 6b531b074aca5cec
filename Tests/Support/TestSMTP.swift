import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real SMTP server of the tests' own: aiosmtpd (Debian's python3-aiosmtpd) on a random port of
/// 127.0.0.1, keeping every mail it takes in a Maildir of its temporary folder, where tests read
/// them as the recipient's mailbox would hold them.
public final class TestSMTP: Sendable {
    public let port: Int
    private let mailDirectory: String
    private let lifecycle: ServerLifecycle

    private init(port: Int, mailDirectory: String, lifecycle: ServerLifecycle) {
        self.port = port
        self.mailDirectory = mailDirectory
        self.lifecycle = lifecycle
    }

    /// "smtp://127.0.0.1:PORT", as `AVIARY_SMTP_URL` takes it.
    public var url: String { "smtp://127.0.0.1:\(port)" }

    static func launch() async throws -> TestSMTP {
        guard let aiosmtpd = findExecutable("aiosmtpd") else {
            throw TestSupportError("aiosmtpd not found in $PATH (apt-get install python3-aiosmtpd)")
        }
        let folder = try TemporaryFolder.create("smtp")
        let cleanupToken = ExitCleanup.register(folder)
        do {
            let port = try freePort()
            let mail = folder.file("mail")
            let lifecycle = ServerLifecycle(
                name: "smtp",
                command: [aiosmtpd, "-n", "-c", "aiosmtpd.handlers.Mailbox", "-l", "127.0.0.1:\(port)", mail],
                folder: folder, cleanupToken: cleanupToken, stopSignal: SIGTERM, isReady: { Self.greets(port: port) })
            let server = TestSMTP(port: port, mailDirectory: mail, lifecycle: lifecycle)
            try await lifecycle.start()
            return server
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
    }

    static func greets(port: Int) -> Bool {
        let reply = try? TCPExchange.run(
            host: "127.0.0.1", port: port, request: Array("QUIT\r\n".utf8), timeout: .seconds(1)
        ) { $0.contains(UInt8(ascii: "\n")) }
        return reply.map { $0.starts(with: Array("220".utf8)) } ?? false
    }

    /// One mail as the server kept it.
    public struct Received: Sendable {
        /// Header names lower-cased; each header's first value.
        public var headers: [String: String]
        public var body: String
    }

    /// Every mail the server took for `address` so far (any order).
    public func mails(to address: String) -> [Received] {
        let files = ["new", "cur"].flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: "\(mailDirectory)/\(folder)")) ?? []).map { "\(mailDirectory)/\(folder)/\($0)" }
        }
        return files.compactMap { path -> Received? in
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
            guard let split = normalized.range(of: "\n\n") else { return nil }
            var headers: [String: String] = [:]
            for line in normalized[..<split.lowerBound].split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                if headers[name] == nil { headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
            }
            guard headers["to"]?.contains(address) == true else { return nil }
            return Received(headers: headers, body: String(normalized[split.upperBound...]))
        }
    }
}

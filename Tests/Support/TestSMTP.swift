import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real SMTP server of the tests' own: aiosmtpd (Debian's python3-aiosmtpd) on a random port of
/// 127.0.0.1, keeping every mail it takes in a Maildir of its temporary folder, where tests read
/// them as the recipient's mailbox would hold them. With TLS, it presents a certificate made for
/// it (self-signed, for 127.0.0.1 and localhost, by openssl).
public final class TestSMTP: Sendable {
    /// How the server speaks TLS.
    public enum TLS: Sendable {
        case none
        /// SMTPS: TLS from the first byte.
        case implicit
        /// `STARTTLS`, which the server requires before it takes mail.
        case startTLS
    }

    public let port: Int
    public let tls: TLS
    /// The certificate the server presents, PEM (what `AVIARY_SMTP_TLS_CA_FILE` takes); nil without TLS.
    public let certificateFile: String?
    private let mailDirectory: String
    private let lifecycle: ServerLifecycle

    private init(port: Int, tls: TLS, certificateFile: String?, mailDirectory: String, lifecycle: ServerLifecycle) {
        self.port = port
        self.tls = tls
        self.certificateFile = certificateFile
        self.mailDirectory = mailDirectory
        self.lifecycle = lifecycle
    }

    /// "smtp://127.0.0.1:PORT" (or "smtps://…" for SMTPS), as `AVIARY_SMTP_URL` takes it.
    public var url: String { "\(tls == .implicit ? "smtps" : "smtp")://127.0.0.1:\(port)" }

    static func launch(tls: TLS = .none) async throws -> TestSMTP {
        guard let aiosmtpd = findExecutable("aiosmtpd") else {
            throw TestSupportError("aiosmtpd not found in $PATH (apt-get install python3-aiosmtpd)")
        }
        let folder = try TemporaryFolder.create("smtp")
        let cleanupToken = ExitCleanup.register(folder)
        do {
            let port = try freePort()
            let mail = folder.file("mail")
            var command = [aiosmtpd, "-n", "-c", "aiosmtpd.handlers.Mailbox", "-l", "127.0.0.1:\(port)"]
            var certificate: String?
            if tls != .none {
                let (certificateFile, keyFile) = (folder.file("cert.pem"), folder.file("key.pem"))
                try await Self.makeCertificate(certificateFile, key: keyFile)
                command += tls == .implicit
                    ? ["--smtpscert", certificateFile, "--smtpskey", keyFile] : ["--tlscert", certificateFile, "--tlskey", keyFile]
                certificate = certificateFile
            }
            // An SMTPS server greets only after the TLS handshake: that it accepts will do.
            let implicit = tls == .implicit
            let lifecycle = ServerLifecycle(
                name: "smtp", command: command + [mail], folder: folder, cleanupToken: cleanupToken, stopSignal: SIGTERM,
                isReady: { implicit ? Self.accepts(port: port) : Self.greets(port: port) })
            let server = TestSMTP(port: port, tls: tls, certificateFile: certificate, mailDirectory: mail, lifecycle: lifecycle)
            try await lifecycle.start()
            return server
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
    }

    /// A self-signed P-256 certificate for 127.0.0.1 and localhost, valid two days.
    private static func makeCertificate(_ certificate: String, key: String) async throws {
        guard let openssl = findExecutable("openssl") else { throw TestSupportError("openssl not found in $PATH (apt-get install openssl)") }
        let made = try await Command(arguments: [
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
            "-out", certificate, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ]).run()
        guard made.status == 0 else { throw TestSupportError("openssl could not make a certificate: \(made.output)") }
    }

    static func accepts(port: Int) -> Bool {
        (try? TCPExchange.run(host: "127.0.0.1", port: port, request: [], timeout: .seconds(1)) { _ in true }) != nil
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

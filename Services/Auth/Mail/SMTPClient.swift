import Foundation
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import ServiceKit

/// Where mail is handed over: `AVIARY_SMTP_URL`, `smtps://[user:password@]host[:port]` (TLS from
/// the first byte, port 465 by default) or `smtp://[user:password@]host[:port]` (port 25 by
/// default; TLS through `STARTTLS` whenever the server offers it). With a user, `AUTH PLAIN`
/// follows, over TLS: credentials go in the clear only to a loopback address.
struct SMTPServer: Sendable, Equatable {
    var host: String
    var port: Int
    var user: String?
    var password: String?
    /// `smtps://`: TLS from the first byte.
    var implicitTLS: Bool

    /// The server of `url`; nil when it is not an `smtp://` or `smtps://` URL with a host.
    init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme, ["smtp", "smtps"].contains(scheme),
            let host = components.host, !host.isEmpty
        else { return nil }
        self.host = host
        implicitTLS = scheme == "smtps"
        port = components.port ?? (implicitTLS ? 465 : 25)
        user = components.user?.removingPercentEncoding
        password = components.password?.removingPercentEncoding
    }

    /// Whether `host` is this machine (`localhost`, an address of 127.0.0.0/8, `::1`), where nothing
    /// travels a network. A name that merely starts with `127.` is not.
    var isLoopback: Bool {
        host == "localhost" || (isAddress && (address.hasPrefix("127.") || address == "::1"))
    }

    /// Whether `host` is an IP address (no name to give or check in TLS).
    var isAddress: Bool {
        (try? SocketAddress(ipAddress: address, port: 0)) != nil
    }

    /// `host` without the brackets of an IPv6 address in a URL.
    private var address: String { host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) }
}

/// One plain-text mail.
struct Mail: Sendable, Equatable {
    var from: String
    var to: String
    var subject: String
    var body: String
}

/// Hands mail to an SMTP server (RFC 5321): one connection for a batch, `EHLO`, TLS (from the
/// start, or by `STARTTLS` and `EHLO` again), `AUTH PLAIN` when the server has credentials, then
/// `MAIL FROM`, `RCPT TO` and `DATA` per mail, and `QUIT`. The whole conversation must end within
/// ``patience`` (a server that stops answering is left); a mail the server refuses is reported and
/// the next one goes on.
struct SMTPClient: Sendable {
    let server: SMTPServer
    /// The name given in `EHLO`.
    let heloName: String
    /// Verifies the server's certificate: against the system's roots, or those of
    /// `AVIARY_SMTP_TLS_CA_FILE`; its name too, unless the server is named by an address.
    let tls: NIOSSLContext
    static let patience = Duration.seconds(30)

    init(server: SMTPServer, heloName: String, trustedRootsFile: String? = nil) throws {
        self.server = server
        self.heloName = heloName
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let trustedRootsFile { configuration.trustRoots = .file(trustedRootsFile) }
        if server.isAddress { configuration.certificateVerification = .noHostnameVerification }
        tls = try NIOSSLContext(configuration: configuration)
    }

    /// What became of each of `mails`, in order: nil when the server took it, else its refusal.
    /// Throws when the server cannot be reached or fails mid-conversation (none was taken then
    /// unless its entry came back nil).
    func send(_ mails: [Mail]) async throws -> [SMTPError?] {
        try await withTimeLimit(
            Self.patience, expired: { SMTPError(command: "the conversation", code: nil, reply: "not over within \(Self.patience)") }
        ) { try await converse(mails) }
    }

    private func converse(_ mails: [Mail]) async throws -> [SMTPError?] {
        let (server, tls) = (server, tls)
        let (raw, channel) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(host: server.host, port: server.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        server.implicitTLS ? try Self.tlsHandler(tls, for: server) : PlaintextAfterSTARTTLSGuard())
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return (channel, try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel))
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var conversation = Conversation(lines: inbound.makeAsyncIterator(), outbound: outbound)
            try await conversation.expect(220, after: nil)
            let extensions = try await conversation.expect(250, after: "EHLO \(heloName)")
            if !server.implicitTLS {
                if extensions.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) {
                    try await raw.eventLoop.submit {
                        try raw.pipeline.syncOperations.handler(type: PlaintextAfterSTARTTLSGuard.self).arm()
                    }.get()
                    try await conversation.expect(220, after: "STARTTLS")
                    do {
                        try await raw.eventLoop.submit {
                            let guarding = try raw.pipeline.syncOperations.handler(type: PlaintextAfterSTARTTLSGuard.self)
                            try raw.pipeline.syncOperations.addHandler(try Self.tlsHandler(tls, for: server), position: .after(guarding))
                            guarding.awaitTLS()
                        }.get()
                    } catch {
                        // The guard may have refused what came after the 220 and closed the
                        // connection first, taking its handlers: its refusal waits in the stream.
                        try? await raw.close()
                        try await conversation.closed()
                        throw error
                    }
                    try await conversation.expect(250, after: "EHLO \(heloName)")
                } else if server.user != nil, !server.isLoopback {
                    throw SMTPError(
                        command: "EHLO", code: nil,
                        reply: "the server offers no STARTTLS, and credentials go in the clear only to a loopback address")
                }
            }
            if let user = server.user {
                let credentials = Data("\0\(user)\0\(server.password ?? "")".utf8).base64EncodedString()
                try await conversation.expect(235, after: "AUTH PLAIN \(credentials)", shown: "AUTH PLAIN")
            }
            var outcomes: [SMTPError?] = []
            for mail in mails {
                do {
                    try await conversation.expect(250, after: "MAIL FROM:<\(Self.address(in: mail.from))>")
                    try await conversation.expect(250, after: "RCPT TO:<\(Self.address(in: mail.to))>")
                    try await conversation.expect(354, after: "DATA")
                    try await conversation.expect(250, after: Self.message(mail), shown: "the message")
                    outcomes.append(nil)
                } catch let refusal as SMTPError where refusal.isRefusal {
                    outcomes.append(refusal)
                    try await conversation.expect(250, after: "RSET")
                }
            }
            _ = try? await conversation.expect(221, after: "QUIT")
            return outcomes
        }
    }

    /// The TLS handler of a conversation with `server`: its name given (SNI) and checked unless it
    /// is named by an address.
    private static func tlsHandler(_ context: NIOSSLContext, for server: SMTPServer) throws -> NIOSSLClientHandler {
        try NIOSSLClientHandler(context: context, serverHostname: server.isAddress ? nil : server.host)
    }

    /// The address inside `mailbox` (`Name <address>` or a bare address), without line breaks.
    static func address(in mailbox: String) -> String {
        let address = mailbox.firstIndex(of: "<").flatMap { start in
            mailbox[start...].firstIndex(of: ">").map { String(mailbox[mailbox.index(after: start)..<$0]) }
        } ?? mailbox
        return address.filter { !$0.isNewline && $0 != "<" && $0 != ">" }
    }

    /// The message `DATA` sends, ending with the lone dot: headers, then the body with every line
    /// ending in CRLF and a leading dot doubled.
    static func message(_ mail: Mail) -> String {
        func header(_ text: String) -> String {
            let flat = text.filter { !$0.isNewline }
            guard !flat.allSatisfy(\.isASCII) else { return flat }
            return "=?UTF-8?B?\(Data(flat.utf8).base64EncodedString())?="
        }
        let date = Date()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let domain = address(in: mail.from).split(separator: "@").last.map(String.init) ?? "localhost"
        let headers = [
            "From: \(header(mail.from))", "To: \(header(mail.to))", "Subject: \(header(mail.subject))",
            "Date: \(formatter.string(from: date))", "Message-ID: <\(UUID().uuidString.lowercased())@\(domain)>",
            "MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit",
        ]
        let body = mail.body.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            return line.hasPrefix(".") ? "." + line : String(line)
        }
        return (headers + [""] + body + ["."]).joined(separator: "\r\n")
    }
}

/// What went wrong talking to an SMTP server.
struct SMTPError: Error, CustomStringConvertible {
    /// The command answered (or "the greeting"), and the server's reply; no reply when the
    /// connection ended or the reply did not come in time.
    var command: String
    var code: Int?
    var reply: String

    /// A refusal of the mail itself (5xx after `MAIL FROM`, `RCPT TO` or the message), as opposed to
    /// a conversation that broke.
    var isRefusal: Bool {
        (code ?? 0) >= 500 && !["the greeting", "EHLO", "STARTTLS", "AUTH PLAIN"].contains(where: command.hasPrefix)
    }

    var description: String {
        code.map { "SMTP \(command) answered \($0) \(reply)" } ?? "SMTP \(command): \(reply)"
    }
}

/// Closes the connection when the server sends anything after its reply to `STARTTLS` and before
/// TLS begins. Such bytes would sit in the line buffer and be read after the handshake as if they
/// had come over TLS: a man in the middle's way to inject replies (the STARTTLS injection of
/// CVE-2011-0411, from the server's side). It sits first, so it sees the bytes as they arrive,
/// whether TLS is in place behind it yet or not: it leaves once the server's first bytes after
/// TLS was added start a TLS record, and refuses any that do not.
private final class PlaintextAfterSTARTTLSGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        /// Before `STARTTLS`: everything passes.
        case open
        /// `STARTTLS` sent: the start of the reply line being read (its code, and whether a space
        /// says it is the last).
        case readingReply(lineStart: [UInt8])
        /// The reply's last line arrived: nothing more may until TLS is in place.
        case closedUntilTLS
        /// TLS is in place behind the guard: the server's next bytes must be a TLS record.
        case awaitingTLS
    }

    private var state = State.open

    func arm() { state = .readingReply(lineStart: []) }

    /// Called in the event-loop turn that adds TLS behind the guard.
    func awaitTLS() { state = .awaitingTLS }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data).readableBytesView
        switch state {
        case .open:
            context.fireChannelRead(data)
        case .closedUntilTLS:
            refuse(context: context)
        case .awaitingTLS:
            // A record's first byte is its content type: 20 to 24 (change cipher spec, alert,
            // handshake, application data, heartbeat). A reply's is a digit.
            guard let first = bytes.first, (20...24).contains(first) else { return refuse(context: context) }
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .readingReply(var lineStart):
            for index in bytes.indices {
                if lineStart.count < 4 { lineStart.append(bytes[index]) }
                guard bytes[index] == UInt8(ascii: "\n") else { continue }
                if lineStart.count == 4, lineStart[3] == UInt8(ascii: " ") {
                    guard index == bytes.index(before: bytes.endIndex) else { return refuse(context: context) }
                    state = .closedUntilTLS
                    return context.fireChannelRead(data)
                }
                lineStart = []
            }
            state = .readingReply(lineStart: lineStart)
            context.fireChannelRead(data)
        }
    }

    private func refuse(context: ChannelHandlerContext) {
        context.fireErrorCaught(
            SMTPError(command: "STARTTLS", code: nil, reply: "the server sent more before TLS began; it may be tampered with"))
        context.close(promise: nil)
    }
}

/// One SMTP conversation: a command, then its reply, whose lines `250-…` go on and `250 …` ends.
private struct Conversation {
    var lines: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Reads what is left of a closed connection (it waits while the connection is open): throws
    /// the error that closed it, if one did.
    mutating func closed() async throws {
        while try await lines.next() != nil {}
    }

    /// Sends `command` (nil: none, for the greeting) and checks that the reply's code is `code`;
    /// the reply's lines, without their codes.
    @discardableResult
    mutating func expect(_ code: Int, after command: String?, shown: String? = nil) async throws -> [String] {
        let name = shown ?? command.map { String($0.prefix(while: { $0 != ":" && $0 != " " })) } ?? "the greeting"
        if let command {
            do {
                try await outbound.write(ByteBuffer(string: command + "\r\n"))
            } catch {
                // Closed under the write: what closed it, when something did, waits in the stream.
                try await closed()
                throw error
            }
        }
        var text: [String] = []
        while true {
            let next = try await lines.next()
            guard var buffer = next else { throw SMTPError(command: name, code: nil, reply: "the server closed the connection") }
            let line = buffer.readString(length: buffer.readableBytes) ?? ""
            guard let replyCode = Int(line.prefix(3)) else { throw SMTPError(command: name, code: nil, reply: "malformed reply: \(line.prefix(200))") }
            text.append(String(line.dropFirst(4)))
            if line.count > 3, line[line.index(line.startIndex, offsetBy: 3)] == "-" { continue }
            guard replyCode == code else { throw SMTPError(command: name, code: replyCode, reply: text.joined(separator: " ")) }
            return text
        }
    }
}

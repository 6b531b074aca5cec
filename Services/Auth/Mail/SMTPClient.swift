import Foundation
import NIOCore
import NIOExtras
import NIOPosix

/// Where mail is handed over: `AVIARY_SMTP_URL`, `smtp://[user:password@]host[:port]` (port 25 by
/// default; with a user, `AUTH PLAIN` after `EHLO`). Plain SMTP: the relay is expected on the same
/// host or network (a local Postfix, the provider's relay through a tunnel).
struct SMTPServer: Sendable, Equatable {
    var host: String
    var port: Int
    var user: String?
    var password: String?

    /// The server of `url`; nil when it is not an `smtp://` URL with a host.
    init?(url: String) {
        guard let components = URLComponents(string: url), components.scheme == "smtp", let host = components.host,
            !host.isEmpty
        else { return nil }
        self.host = host
        port = components.port ?? 25
        user = components.user?.removingPercentEncoding
        password = components.password?.removingPercentEncoding
    }
}

/// One plain-text mail.
struct Mail: Sendable, Equatable {
    var from: String
    var to: String
    var subject: String
    var body: String
}

/// Hands mail to an SMTP server (RFC 5321): one connection for a batch, `EHLO`, `AUTH PLAIN` when
/// the server has credentials, then `MAIL FROM`, `RCPT TO` and `DATA` per mail, and `QUIT`. The
/// whole conversation must end within ``patience`` (a server that stops answering is left); a mail
/// the server refuses is reported and the next one goes on.
struct SMTPClient: Sendable {
    let server: SMTPServer
    /// The name given in `EHLO`.
    let heloName: String
    static let patience = Duration.seconds(30)

    /// What became of each of `mails`, in order: nil when the server took it, else its refusal.
    /// Throws when the server cannot be reached or fails mid-conversation (none was taken then
    /// unless its entry came back nil).
    func send(_ mails: [Mail]) async throws -> [SMTPError?] {
        try await withThrowingTaskGroup(of: [SMTPError?].self) { group in
            group.addTask { try await converse(mails) }
            group.addTask {
                try await Task.sleep(for: Self.patience)
                throw SMTPError(command: "the conversation", code: nil, reply: "not over within \(Self.patience)")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? []
        }
    }

    private func converse(_ mails: [Mail]) async throws -> [SMTPError?] {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(host: server.host, port: server.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var conversation = Conversation(lines: inbound.makeAsyncIterator(), outbound: outbound)
            try await conversation.expect(220, after: nil)
            try await conversation.expect(250, after: "EHLO \(heloName)")
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
            try? await conversation.expect(221, after: "QUIT")
            return outcomes
        }
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
    var isRefusal: Bool { (code ?? 0) >= 500 && !["the greeting", "EHLO", "AUTH PLAIN"].contains(where: command.hasPrefix) }

    var description: String {
        code.map { "SMTP \(command) answered \($0) \(reply)" } ?? "SMTP \(command): \(reply)"
    }
}

/// One SMTP conversation: a command, then its reply, whose lines `250-…` go on and `250 …` ends.
private struct Conversation {
    var lines: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Sends `command` (nil: none, for the greeting) and checks that the reply's code is `code`.
    mutating func expect(_ code: Int, after command: String?, shown: String? = nil) async throws {
        let name = shown ?? command.map { String($0.prefix(while: { $0 != ":" && $0 != " " })) } ?? "the greeting"
        if let command { try await outbound.write(ByteBuffer(string: command + "\r\n")) }
        var text: [String] = []
        while true {
            let next = try await lines.next()
            guard var buffer = next else { throw SMTPError(command: name, code: nil, reply: "the server closed the connection") }
            let line = buffer.readString(length: buffer.readableBytes) ?? ""
            guard let replyCode = Int(line.prefix(3)) else { throw SMTPError(command: name, code: nil, reply: "malformed reply: \(line.prefix(200))") }
            text.append(String(line.dropFirst(4)))
            if line.count > 3, line[line.index(line.startIndex, offsetBy: 3)] == "-" { continue }
            guard replyCode == code else { throw SMTPError(command: name, code: replyCode, reply: text.joined(separator: " ")) }
            return
        }
    }
}

@testable import AuthService
import NIOCore
import NIOPosix
import Testing

/// A server (or a man in the middle) that sends more after its `220` to `STARTTLS`, in the clear:
/// the client must not read it as a reply that came over TLS.
@Suite("STARTTLS reply injection")
struct STARTTLSInjectionTests {
    @Test("a reply sent in the clear after 220 to STARTTLS ends the conversation before TLS", arguments: [false, true])
    func injectedReplyIsRefused(_ inSeparateWrite: Bool) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(InjectingSMTPServer(inSeparateWrite: inSeparateWrite))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        let address = try #require(SMTPServer(url: "smtp://user:secret@127.0.0.1:\(port)"))
        let client = try SMTPClient(server: address, heloName: "aviary.test")
        let mail = Mail(from: "Aviary <noreply@aviary.test>", to: "ana@example.com", subject: "Hello", body: "Hi")
        do {
            let outcomes = try await client.send([mail])
            Issue.record("the conversation went on: \(outcomes)")
        } catch {
            let refusal = try #require(error as? SMTPError, "\(error)")
            #expect(refusal.command == "STARTTLS" && refusal.reply.contains("before TLS began"), "\(refusal)")
        }
    }
}

/// Offers `STARTTLS` and answers it with `220`, then `250` at once (in the same write, or the next).
private final class InjectingSMTPServer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let inSeparateWrite: Bool

    init(inSeparateWrite: Bool) { self.inSeparateWrite = inSeparateWrite }

    func channelActive(context: ChannelHandlerContext) {
        send("220 mail.test ready\r\n", context)
    }

    /// The client writes a command at a time and waits for its reply: a read holds one.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        let command = (bytes.readString(length: bytes.readableBytes) ?? "").uppercased()
        if command.hasPrefix("EHLO") {
            send("250-mail.test\r\n250 STARTTLS\r\n", context)
        } else if command.hasPrefix("STARTTLS") {
            if inSeparateWrite {
                send("220 go ahead\r\n", context)
                send("250 injected\r\n", context)
            } else {
                send("220 go ahead\r\n250 injected\r\n", context)
            }
        } else {
            send("250 ok\r\n", context)
        }
    }

    private func send(_ text: String, _ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
    }
}

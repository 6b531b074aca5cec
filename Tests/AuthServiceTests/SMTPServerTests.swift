@testable import AuthService
import Testing

/// `AVIARY_SMTP_URL` as the mail queue reads it: the scheme's TLS and port, and which hosts count as
/// this machine (where credentials may go in the clear).
@Suite("AVIARY_SMTP_URL")
struct SMTPServerTests {
    @Test("smtps:// is TLS from the start on 465, smtp:// is 25; other schemes and hostless URLs are refused")
    func schemes() throws {
        let tls = try #require(SMTPServer(url: "smtps://user:p%40ss@mail.example.com"))
        #expect(tls.implicitTLS && tls.port == 465 && tls.user == "user" && tls.password == "p@ss")
        let plain = try #require(SMTPServer(url: "smtp://mail.example.com:587"))
        #expect(!plain.implicitTLS && plain.port == 587)
        #expect(SMTPServer(url: "smtp://127.0.0.1")?.port == 25)
        #expect(SMTPServer(url: "http://mail.example.com") == nil && SMTPServer(url: "smtp://") == nil)
    }

    @Test("only localhost and loopback addresses count as this machine; a name starting with 127. does not")
    func loopback() throws {
        for url in ["smtp://localhost", "smtp://127.0.0.1:2525", "smtp://127.1.2.3", "smtp://[::1]:25"] {
            #expect(SMTPServer(url: url)?.isLoopback == true, "\(url)")
        }
        for url in ["smtp://127.evil.example", "smtp://mail.example.com", "smtp://10.0.0.1", "smtp://[::2]"] {
            #expect(SMTPServer(url: url)?.isLoopback == false, "\(url)")
        }
        #expect(SMTPServer(url: "smtp://[::1]")?.isAddress == true && SMTPServer(url: "smtp://localhost")?.isAddress == false)
    }
}

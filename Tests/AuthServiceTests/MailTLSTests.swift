import AviaryJSON
import Foundation
import Testing
import TestSupport

/// auth hands its mail over TLS, to real aiosmtpd servers with a certificate of their own: to an
/// SMTPS server, and by `STARTTLS` to one that takes no mail without it. It checks the server's
/// certificate against `AVIARY_SMTP_TLS_CA_FILE`, else the system's roots.
@Suite("Mail over TLS")
struct MailTLSTests {
    /// An auth instance of its own (it stops when the instance goes), handing its mail to `smtp`,
    /// trusting `roots` when given.
    private func auth(sendingTo smtp: TestSMTP, trusting roots: String?) async throws -> AuthInstance {
        var environment = ["AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())", "AVIARY_SMTP_URL": smtp.url]
        environment["AVIARY_SMTP_TLS_CA_FILE"] = roots
        return try await AuthStack.start(environment)
    }

    @Test("a password reset mail reaches an SMTPS server, and a server that requires STARTTLS", arguments: [TestSMTP.TLS.implicit, .startTLS])
    func mailGoesOverTLS(_ tls: TestSMTP.TLS) async throws {
        let smtp = try await TestServers.startPrivateSMTP(tls: tls)
        let roots = try #require(smtp.certificateFile)
        let instance = try await auth(sendingTo: smtp, trusting: roots)
        let auth = instance.api
        let account = try await auth.register()
        _ = try await auth.call("auth.requestPasswordReset", ["email": .string(account.email)])
        #expect(await eventually(timeout: .seconds(20)) { !smtp.mails(to: account.email).isEmpty })
        let mail = try #require(smtp.mails(to: account.email).first)
        #expect(mail.headers["subject"]?.contains("password") == true, "\(mail.headers)")
        withExtendedLifetime(instance) {}
    }

    @Test("a server whose certificate is not trusted gets no mail")
    func untrustedCertificate() async throws {
        let smtp = try await TestServers.startPrivateSMTP(tls: .implicit)
        let instance = try await auth(sendingTo: smtp, trusting: nil)
        let auth = instance.api
        let account = try await auth.register()
        _ = try await auth.call("auth.requestPasswordReset", ["email": .string(account.email)])
        // The queue tries at once, then backs off: three seconds see its first tries fail.
        try await Task.sleep(for: .seconds(3))
        #expect(smtp.mails(to: account.email).isEmpty)
        withExtendedLifetime(instance) {}
    }
}

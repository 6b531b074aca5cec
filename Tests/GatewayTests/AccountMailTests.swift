import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Email verification and password reset end to end: the calls go through the gateway, auth hands
/// its mail to a real SMTP server (aiosmtpd), and the tests read the tokens from the mail it kept.
@Suite("Mail: email verification and password reset")
struct AccountMailTests {
    struct Calls {
        let edge: GatewayStack

        func call(_ method: String, _ params: [String: JSONValue] = [:], token: String?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: token)
        }

        func result(_ method: String, _ params: [String: JSONValue] = [:], token: String?) async throws -> JSONValue {
            let answer = try await call(method, params, token: token)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }

        /// The error's reason and field.
        func refusal(_ method: String, _ params: [String: JSONValue] = [:], token: String?) async throws -> (String?, String?) {
            let data = try await call(method, params, token: token)["error"]?["data"]
            return (data?["reason"]?.stringValue, data?["field"]?.stringValue)
        }
    }

    /// The tokens of the mails `address` received, oldest first, once there are `count`.
    static func tokens(to address: String, count: Int) async throws -> [String] {
        let smtp = try await TestServers.smtp()
        var found: [String] = []
        _ = await eventually(timeout: .seconds(20), interval: .milliseconds(100)) {
            found = smtp.mails(to: address).sorted { ($0.headers["date"] ?? "") < ($1.headers["date"] ?? "") }
                .compactMap { mail in
                    mail.body.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                        .first { $0.count == 43 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } }
                }
            return found.count >= count
        }
        return found
    }

    @Test("a verification mail's token verifies the email once; a newer one replaces it; each refusal")
    func verification() async throws {
        let edge = try await GatewayStack.shared()
        let calls = Calls(edge: edge)
        let ana = try await edge.register("ana")
        let address = "\(ana.username)@example.com"
        #expect(try await calls.result("auth.me", token: ana.token)["emailVerified"] == false)
        #expect(try await calls.result("auth.getUser", ["userId": .string(ana.id)], token: nil)["emailVerified"] == nil)

        #expect(try await calls.result("auth.requestEmailVerification", token: ana.token)["requested"] == true)
        let first = try #require(try await Self.tokens(to: address, count: 1).first)
        _ = try await calls.result("auth.requestEmailVerification", token: ana.token)
        let tokens = try await Self.tokens(to: address, count: 2)
        try #require(tokens.count == 2)
        let mail = try #require(try await TestServers.smtp().mails(to: address).first)
        #expect(mail.headers["subject"] == "Verify your email on Aviary" && mail.headers["from"]?.contains("aviary@example.com") == true)

        // The first token was replaced by the second, which works once.
        #expect(try await calls.refusal("auth.verifyEmail", ["token": .string(first)], token: nil) == ("validation", "token"))
        #expect(try await calls.result("auth.verifyEmail", ["token": .string(tokens[1])], token: nil)["emailVerified"] == true)
        #expect(try await calls.refusal("auth.verifyEmail", ["token": .string(tokens[1])], token: nil) == ("validation", "token"))
        #expect(try await calls.result("auth.me", token: ana.token)["emailVerified"] == true)
        // Nothing left to verify; tokens of no mail; no caller.
        #expect(try await calls.refusal("auth.requestEmailVerification", token: ana.token).0 == "conflict")
        #expect(try await calls.refusal("auth.verifyEmail", ["token": "not-a-token"], token: nil) == ("validation", "token"))
        #expect(try await calls.refusal("auth.requestEmailVerification", token: nil).0 == "unauthenticated")
    }

    @Test("a reset mail's token sets a new password and ends every session; unknown addresses answer alike")
    func passwordReset() async throws {
        let edge = try await GatewayStack.shared()
        let calls = Calls(edge: edge)
        let ben = try await edge.register("ben")
        let address = "\(ben.username)@example.com"
        _ = try await calls.result("auth.login", ["login": .string(ben.username), "password": "correct horse battery"], token: nil)

        // The same answer for an address with an account and one without; only the first gets mail.
        let nobody = "nobody_\(UInt32.random(in: 0...UInt32.max))@example.com"
        #expect(try await calls.result("auth.requestPasswordReset", ["email": .string(address.uppercased())], token: nil)["requested"] == true)
        #expect(try await calls.result("auth.requestPasswordReset", ["email": .string(nobody)], token: nil)["requested"] == true)
        let token = try #require(try await Self.tokens(to: address, count: 1).first)
        #expect(try await TestServers.smtp().mails(to: nobody).isEmpty)

        #expect(try await calls.refusal("auth.resetPassword", ["token": .string(token), "newPassword": "short"], token: nil)
            == ("validation", "newPassword"))
        let reset = try await calls.result("auth.resetPassword", ["token": .string(token), "newPassword": "a brand new passphrase"], token: nil)
        #expect(reset["endedSessions"] == 2)
        #expect(try await calls.refusal("auth.resetPassword", ["token": .string(token), "newPassword": "another passphrase"], token: nil)
            == ("validation", "token"))
        // The old sessions are over; the old password is refused, the new one signs in, and the
        // email counts as verified.
        #expect(await eventually { (try? await calls.refusal("auth.me", token: ben.token).0) == "unauthenticated" })
        #expect(try await calls.refusal("auth.login", ["login": .string(address), "password": "correct horse battery"], token: nil).0
            == "unauthenticated")
        let signedIn = try await calls.result("auth.login", ["login": .string(address), "password": "a brand new passphrase"], token: nil)
        #expect(signedIn["user"]?["emailVerified"] == true)

        // Refusals: not an address; five mails an hour per address asked for.
        #expect(try await calls.refusal("auth.requestPasswordReset", ["email": "not-an-address"], token: nil) == ("validation", "email"))
        for _ in 0..<4 { _ = try await calls.result("auth.requestPasswordReset", ["email": .string(nobody)], token: nil) }
        #expect(try await calls.refusal("auth.requestPasswordReset", ["email": .string(nobody)], token: nil).0 == "rate_limited")
    }
}

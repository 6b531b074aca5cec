import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Testing

/// Limits on sign-in and registration trip, say when to retry, and recover (on an instance with
/// low limits: 20 logins a minute per login name, 30 per address, 3 registrations an hour).
@Suite(.serialized) struct RateLimitTests {
    @Test func limitsTripAndRecover() async throws {
        let auth = try await AuthStack.shared.rateLimited().api

        // Registration: three an hour from one address.
        var accounts: [Account] = []
        for _ in 0..<3 { accounts.append(try await auth.register()) }
        let registration = await expectRPCError(Code.rateLimited) { _ = try await auth.register() }
        let registrationRetry = registration?.data?["retryAfterMs"]?.intValue ?? 0
        #expect(registrationRetry > 0 && registrationRetry <= 3_600_000 / 3)

        // Per account: wrong passwords until refused; the right one is refused too, until a token is back.
        let target = accounts[0]
        var attempts = 0
        var refusal: RPCError?
        while refusal == nil && attempts < 40 {
            attempts += 1
            do {
                _ = try await auth.login(target.username, "wrong password \(attempts)")
            } catch let error as RPCError where error.code == Code.rateLimited {
                refusal = error
            } catch let error as RPCError {
                #expect(error.code == Code.unauthenticated)
            }
        }
        let accountRefusal = try #require(refusal)
        // Twenty pass at once; a few more may as the bucket refills (one every 3 s) while they run.
        #expect(attempts > 20, "refused after \(attempts) attempts")
        #expect(accountRefusal.message.contains("account"))
        let retry = accountRefusal.data?["retryAfterMs"]?.intValue ?? 0
        if retry > 500 {
            await expectRPCError(Code.rateLimited) { _ = try await auth.login(target.username, target.password) }
        }
        #expect(retry > 0 && retry <= 3000)
        // The account's email has a bucket of its own: were it refused too, a drained username
        // would tell which address is that account's email.
        await expectRPCError(Code.unauthenticated) { _ = try await auth.login(target.email, "wrong password") }
        try await Task.sleep(for: .milliseconds(retry + 200))
        _ = try await auth.login(target.email, target.password)

        // Per address: other accounts, until the address as a whole is refused.
        refusal = nil
        var addressAttempts = 0
        while refusal == nil && addressAttempts < 30 {
            addressAttempts += 1
            do {
                _ = try await auth.login(accounts[1 + addressAttempts % 2].username, "wrong password")
            } catch let error as RPCError where error.code == Code.rateLimited {
                refusal = error
            } catch let error as RPCError {
                #expect(error.code == Code.unauthenticated)
            }
        }
        let addressRefusal = try #require(refusal)
        #expect(addressRefusal.message.contains("address"))
        let addressRetry = addressRefusal.data?["retryAfterMs"]?.intValue ?? 0
        #expect(addressRetry > 0 && addressRetry <= 2000)
        try await Task.sleep(for: .milliseconds(addressRetry + 200))
        _ = try await auth.login(accounts[2].username, accounts[2].password)
    }
}

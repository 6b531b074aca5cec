import RPC
import ServiceKit

/// How often sign-ins and registrations may be tried, enforced across every instance through Redis:
/// `AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE` (default 10, per login name: the username and the
/// email each), `AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE`
/// (default 30), `AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR` (default 5).
struct AuthRateLimits: Sendable {
    private let limiter: RateLimiter
    private let loginPerAccountPerMinute: Int
    private let loginPerAddressPerMinute: Int
    private let registerPerAddressPerHour: Int

    init(configuration: ServiceConfiguration, limiter: RateLimiter) throws {
        self.limiter = limiter
        loginPerAccountPerMinute = try configuration.integer(
            "AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE", default: 10, in: 1...1_000_000)
        loginPerAddressPerMinute = try configuration.integer(
            "AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE", default: 30, in: 1...1_000_000)
        registerPerAddressPerHour = try configuration.integer(
            "AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR", default: 5, in: 1...1_000_000)
    }

    /// Password attempts from one network address, whatever account they name.
    func checkLogin(address: String?) async throws(RPCError) {
        guard let address else { return }
        try await limiter.check(
            key: "auth:login:address:\(address)", limit: loginPerAddressPerMinute, per: .seconds(60),
            message: "too many sign-in attempts from this address; retry later")
    }

    /// Password attempts with one login (a username or an email, as typed, case aside), whether
    /// or not it names an account. Keyed by the text, not the account it names: an account's
    /// username and email have buckets of their own, else draining one and trying an address
    /// would tell whether the address is that account's email.
    func checkLogin(login: String) async throws(RPCError) {
        try await limiter.check(
            key: "auth:login:name:\(login.lowercased())", limit: loginPerAccountPerMinute, per: .seconds(60),
            message: "too many sign-in attempts for this account; retry later")
    }

    /// Attempts of a signed-in user to prove the current password (`auth.changePassword`): guessing
    /// it with a stolen access token is limited like signing in.
    func checkPasswordProof(userID: Int64) async throws(RPCError) {
        try await limiter.check(
            key: "auth:password:user:\(userID)", limit: loginPerAccountPerMinute, per: .seconds(60),
            message: "too many attempts at this account's current password; retry later")
    }

    /// At most ten reports an hour per user: enough for anyone reporting what they see, and a
    /// bound on what one account can make the admins read.
    func checkReport(userID: Int64) async throws(RPCError) {
        try await limiter.check(
            key: "auth:report:user:\(userID)", limit: 10, per: .seconds(3600),
            message: "too many reports from this account in the last hour; retry later")
    }

    /// Mail asked for one account or address (`key`: `user:<id>` or `email:<address>`): five an hour.
    func checkMail(key: String) async throws(RPCError) {
        try await limiter.check(
            key: "auth:mail:\(key)", limit: 5, per: .seconds(3600),
            message: "too many mails were asked for this account in the last hour; retry later")
    }

    /// Password reset mails asked from one network address, whatever addresses they name: twenty an hour.
    func checkMail(address: String?) async throws(RPCError) {
        guard let address else { return }
        try await limiter.check(
            key: "auth:mail:address:\(address)", limit: 20, per: .seconds(3600),
            message: "too many password resets were asked from this address; retry later")
    }

    func checkRegistration(address: String?) async throws(RPCError) {
        guard let address else { return }
        try await limiter.check(
            key: "auth:register:address:\(address)", limit: registerPerAddressPerHour, per: .seconds(3600),
            message: "too many accounts were registered from this address; retry later")
    }
}

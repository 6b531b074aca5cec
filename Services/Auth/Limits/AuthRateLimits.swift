import RPC
import ServiceKit

/// How often sign-ins and registrations may be tried, enforced across every instance through Redis:
/// `AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE` (default 10), `AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE`
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

    /// Password attempts against one account (`account` is its id, or the login text for a login
    /// that names no account, so that probing unknown names is limited the same way).
    func checkLogin(account: String) async throws(RPCError) {
        try await limiter.check(
            key: "auth:login:account:\(account)", limit: loginPerAccountPerMinute, per: .seconds(60),
            message: "too many sign-in attempts for this account; retry later")
    }

    func checkRegistration(address: String?) async throws(RPCError) {
        guard let address else { return }
        try await limiter.check(
            key: "auth:register:address:\(address)", limit: registerPerAddressPerHour, per: .seconds(3600),
            message: "too many accounts were registered from this address; retry later")
    }
}

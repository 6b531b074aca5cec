import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import ServiceKit

/// The Aviary accounts the DeathStarBench adapter acts for: DeathStarBench's integer user ids and
/// usernames mapped to the accounts it registered, and an access token for each, refreshed with
/// the account's refresh token shortly before it expires. A refresh spends the token it presents,
/// and a spent one presented again ends the session: so one refresh at a time per account, and
/// the new refresh token is stored before it is used.
actor DSBAccounts {
    struct Account: Sendable {
        var dsbID: Int64
        var userID: Int64
        var username: String
    }

    private struct Session {
        var accessToken: String
        var refreshToken: String
        var expires: Date
    }

    private let postgres: PostgresClient
    private let forwarder: Forwarder
    private var byDSB: [Int64: Account] = [:]
    private var byUsername: [String: Int64] = [:]
    private var byUser: [Int64: Int64] = [:]
    private var sessions: [Int64: Session] = [:]
    private var refreshing: [Int64: Task<String, any Error>] = [:]
    private var loaded = false

    init(postgres: PostgresClient, forwarder: Forwarder) {
        self.postgres = postgres
        self.forwarder = forwarder
    }

    func account(dsbID: Int64) async throws -> Account? {
        try await load()
        return byDSB[dsbID]
    }

    func account(username: String) async throws -> Account? {
        try await load()
        return byUsername[username.lowercased()].flatMap { byDSB[$0] }
    }

    /// DeathStarBench's id of the Aviary user `userID`, when the adapter registered it.
    func dsbID(ofUser userID: Int64) -> Int64? {
        byUser[userID]
    }

    /// Registers an Aviary account for DeathStarBench's user `dsbID` and remembers it.
    func register(dsbID: Int64, username: String, password: String, fullname: String, caller: EdgeCaller) async throws
        -> Account
    {
        try await load()
        if byDSB[dsbID] != nil { throw RPCError.conflict("user_id \(dsbID) is registered already", field: "user_id") }
        let params = try RawJSON(encoding: RegisterParams(
            email: "\(username.lowercased())@dsb.invalid", password: password, username: username, fullname: fullname))
        let registered = try await forwarder.call(.auth, SessionAPI.register.name, params: params, for: caller).get()
            .decode(AuthResult.self)
        let userID = registered.user.id.value
        try await postgres.execute(
            "INSERT INTO gateway.dsb_users (dsb_id, user_id, username, refresh_token) VALUES ($1, $2, $3, $4)",
            [dsbID, userID, username.lowercased(), registered.refreshToken])
        let account = Account(dsbID: dsbID, userID: userID, username: username.lowercased())
        remember(account)
        sessions[dsbID] = Session(
            accessToken: registered.accessToken, refreshToken: registered.refreshToken, expires: registered.expiresAt)
        return account
    }

    /// A current access token of `account`, refreshed when it expires within a minute.
    func token(of account: Account) async throws -> String {
        if let session = sessions[account.dsbID], session.expires.timeIntervalSinceNow > 60 { return session.accessToken }
        if let running = refreshing[account.dsbID] { return try await running.value }
        let task = Task { try await self.refresh(account) }
        refreshing[account.dsbID] = task
        defer { refreshing[account.dsbID] = nil }
        return try await task.value
    }

    private func refresh(_ account: Account) async throws -> String {
        let presented: String
        if let session = sessions[account.dsbID] {
            presented = session.refreshToken
        } else {
            let rows = try await postgres.query("SELECT refresh_token FROM gateway.dsb_users WHERE dsb_id = $1", [account.dsbID])
            guard let stored = try rows.first?.decode(String.self, at: 0) else { throw RPCError.notFound("no user \(account.dsbID)") }
            presented = stored
        }
        let pair = try await forwarder.call(
            .auth, SessionAPI.refresh.name, params: try RawJSON(encoding: RefreshParams(refreshToken: presented)), for: EdgeCaller()
        ).get().decode(TokenPair.self)
        // Stored before it is used: a crash now leaves the token the next refresh must present.
        try await postgres.execute(
            "UPDATE gateway.dsb_users SET refresh_token = $2 WHERE dsb_id = $1", [account.dsbID, pair.refreshToken])
        sessions[account.dsbID] = Session(
            accessToken: pair.accessToken, refreshToken: pair.refreshToken, expires: pair.expiresAt)
        return pair.accessToken
    }

    private func load() async throws {
        guard !loaded else { return }
        let rows = try await postgres.query("SELECT dsb_id, user_id, username FROM gateway.dsb_users")
        for row in rows {
            remember(Account(dsbID: try row.decode(Int64.self, at: 0), userID: try row.decode(Int64.self, at: 1), username: try row.decode(String.self, at: 2)))
        }
        loaded = true
    }

    private func remember(_ account: Account) {
        byDSB[account.dsbID] = account
        byUsername[account.username] = account.dsbID
        byUser[account.userID] = account.dsbID
    }
}

import AviaryAPI
import AuthTokens
import Foundation
import Logging
import Redis
import RPC
import ServiceKit

/// The auth service: accounts, sessions and profiles. Handlers live in `Handlers/`, one method per
/// file, as extensions of this type; SQL lives in `Store/`.
public struct AuthService: Sendable {
    let resources: ServiceResources
    let users: UserStore
    let identities: IdentityStore
    let sessions: SessionStore
    let moderation: ModerationStore
    let emailTokens: EmailTokenStore
    let mail: MailQueue
    let exports: DataExportStore
    let issuer: SessionIssuer
    let passwords: PasswordHasher
    /// Checked against for logins that name no account, so that they take as long as real ones.
    let dummyHash: String
    let limits: AuthRateLimits
    /// Nil when Google sign-in is not configured; then `auth.loginWithGoogle` is not registered.
    let google: GoogleIDTokenVerifier?
    let profiles: UserHydrator
    let profileImages: ProfileImages

    /// Builds the service from the runtime's resources and `AVIARY_AUTH_*` settings:
    /// `AVIARY_AUTH_HASH_THREADS` (threads hashing passwords, default one per core),
    /// `AVIARY_AUTH_ARGON2_MEMORY_KIB` and `AVIARY_AUTH_ARGON2_ITERATIONS` (the hash cost, OWASP's
    /// 19,456 KiB and 2 passes by default; raising them re-hashes each password at its next sign-in) and
    /// `AVIARY_MEDIA_PUBLIC_URL` (where profile images are served, default `http://127.0.0.1:7207`),
    /// `AVIARY_AUTH_SESSION_IDLE_DAYS` and `AVIARY_AUTH_SESSION_MAX_DAYS` (``SessionLifetime``) and
    /// `AVIARY_AUTH_SESSION_SWEEP_SECONDS` (how often ended sessions, mail tokens expired a day ago,
    /// the rows of accounts deleted 30 days ago and exports never downloaded are deleted, default
    /// hourly), `AVIARY_SMTP_URL` (``SMTPServer``: none sends no mail), `AVIARY_SMTP_TLS_CA_FILE` (the
    /// certificates to trust instead of the system's) and `AVIARY_MAIL_FROM` (default
    /// `Aviary <no-reply@localhost>`).
    static func make(resources: ServiceResources) async throws -> AuthService {
        let configuration = resources.configuration
        let threads = try configuration.integer(
            "AVIARY_AUTH_HASH_THREADS", default: ProcessInfo.processInfo.activeProcessorCount, in: 1...256)
        var cost = Argon2Parameters()
        cost.memoryKiB = UInt32(
            try configuration.integer("AVIARY_AUTH_ARGON2_MEMORY_KIB", default: Int(cost.memoryKiB), in: 64...4_194_304))
        cost.iterations = UInt32(
            try configuration.integer("AVIARY_AUTH_ARGON2_ITERATIONS", default: Int(cost.iterations), in: 1...64))
        let passwords = PasswordHasher(parameters: cost, threads: threads, maxQueued: threads * 64)
        var generator = SystemRandomNumberGenerator()
        let dummyHash = try await passwords.hash(String(generator.next(), radix: 36) + String(generator.next(), radix: 36))
        var lifetime = SessionLifetime()
        func days(_ variable: String, default value: Duration) throws -> Duration {
            .seconds(86_400 * (try configuration.integer(variable, default: Int(value.components.seconds / 86_400), in: 1...3650)))
        }
        lifetime.idle = try days("AVIARY_AUTH_SESSION_IDLE_DAYS", default: lifetime.idle)
        lifetime.maximum = try days("AVIARY_AUTH_SESSION_MAX_DAYS", default: lifetime.maximum)
        let sessions = SessionStore(postgres: resources.postgres, lifetime: lifetime)
        let emailTokens = EmailTokenStore(postgres: resources.postgres)
        let sweepInterval = try configuration.integer("AVIARY_AUTH_SESSION_SWEEP_SECONDS", default: 3600, in: 1...86_400)
        let users = UserStore(postgres: resources.postgres)
        let exports = DataExportStore(postgres: resources.postgres)
        resources.addBackgroundService(PeriodicJob(every: .seconds(sweepInterval)) { [logger = resources.logger] in
            await sweepEndedSessions(sessions, logger: logger)
            do {
                _ = try await emailTokens.deleteExpired()
                let purged = try await users.purgeDeleted()
                if purged > 0 { logger.info("purged accounts deleted 30 days ago", metadata: ["auth.accounts_purged": "\(purged)"]) }
                let expired = try await expireOverdueExports(exports, media: resources.peers.media)
                if expired > 0 { logger.info("deleted exports never downloaded", metadata: ["auth.exports_expired": "\(expired)"]) }
            } catch {
                logger.warning(
                    "deleting expired mail tokens, old deleted accounts or overdue exports failed; retrying later",
                    metadata: ["error": "\(error)"])
            }
        })
        resources.addBackgroundService(PeriodicJob(every: .seconds(1)) { [logger = resources.logger] in
            await restoreRevocations(
                sessions, into: resources.sessionRevocations, within: resources.tokenLifetime + .seconds(60), logger: logger)
        })
        let mail = try mailQueue(resources)
        resources.addBackgroundService(PeriodicJob(every: .seconds(1)) { await mail.deliver() })
        let issuer = SessionIssuer(
            accessTokens: try await AccessTokenIssuer(keys: resources.tokenKeys, lifetime: resources.tokenLifetime),
            sessions: sessions, ids: resources.ids)
        let exporter = DataExporter(store: exports, issuer: issuer, sessions: sessions, resources: resources, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: .seconds(1)) { await exporter.prepareNext() })
        let mediaBaseURL = configuration.value("AVIARY_MEDIA_PUBLIC_URL") ?? "http://127.0.0.1:7207"
        return AuthService(
            resources: resources,
            users: users,
            identities: IdentityStore(postgres: resources.postgres),
            sessions: sessions,
            moderation: ModerationStore(postgres: resources.postgres),
            emailTokens: emailTokens,
            mail: mail,
            exports: exports,
            issuer: issuer,
            passwords: passwords,
            dummyHash: dummyHash,
            limits: try AuthRateLimits(configuration: configuration, limiter: RateLimiter(redis: resources.redis, logger: resources.logger)),
            google: try GoogleIDTokenVerifier(configuration: configuration, logger: resources.logger),
            profiles: UserHydrator(
                resources: resources, mediaBaseURL: mediaBaseURL.hasSuffix("/") ? String(mediaBaseURL.dropLast()) : mediaBaseURL,
                graphTimeout: .seconds(2)),
            profileImages: ProfileImages(resources: resources))
    }

    /// The mail queue of `AVIARY_SMTP_URL` and `AVIARY_MAIL_FROM`.
    private static func mailQueue(_ resources: ServiceResources) throws -> MailQueue {
        let configuration = resources.configuration
        var smtp: SMTPClient?
        if let url = configuration.value("AVIARY_SMTP_URL"), !url.isEmpty {
            guard let server = SMTPServer(url: url) else {
                throw ConfigurationError(
                    variable: "AVIARY_SMTP_URL",
                    message: "AVIARY_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…, got \(url)")
            }
            let roots = configuration.value("AVIARY_SMTP_TLS_CA_FILE").flatMap { $0.isEmpty ? nil : $0 }
            do {
                smtp = try SMTPClient(server: server, heloName: ProcessInfo.processInfo.hostName, trustedRootsFile: roots)
            } catch {
                throw ConfigurationError(
                    variable: "AVIARY_SMTP_TLS_CA_FILE", message: "AVIARY_SMTP_TLS_CA_FILE must be a PEM file of certificates: \(error)")
            }
        }
        return MailQueue(
            postgres: resources.postgres, smtp: smtp, from: configuration.value("AVIARY_MAIL_FROM") ?? "Aviary <no-reply@localhost>",
            logger: resources.logger)
    }

    /// Has media delete the exports ready for longer than ``DataExportStore/retention``, then marks
    /// them expired, a hundred at a time: how many expired. A failure leaves them ready, for the
    /// next sweep (a second discard of the same media deletes nothing).
    private static func expireOverdueExports(_ exports: DataExportStore, media: Peer<MediaAPI>) async throws -> Int {
        var expired = 0
        while true {
            let overdue = try await exports.overdue(limit: 100)
            for (user, items) in Dictionary(grouping: overdue, by: \.user) {
                _ = try await media.discard(
                    DiscardMediaParams(ownerId: EntityID(user), mediaIds: items.map { EntityID($0.media) }), context: nil)
            }
            try await exports.expired(overdue.map(\.id))
            expired += overdue.count
            if overdue.count < 100 { return expired }
        }
    }

    /// Deletes the sessions that ended long enough ago, and refresh tokens spent long ago, a
    /// thousand per statement.
    private static func sweepEndedSessions(_ sessions: SessionStore, logger: Logger) async {
        func deleteAll(_ batch: (Int) async throws -> Int) async throws -> Int {
            var deleted = 0
            while true {
                // Until one comes back empty: a batch's limit counts a session both revoked and idle
                // twice, so a short batch does not mean none is left.
                let count = try await batch(1000)
                deleted += count
                if count == 0 { return deleted }
            }
        }
        do {
            let ended = try await deleteAll(sessions.deleteEnded)
            if ended > 0 { logger.info("deleted ended sessions", metadata: ["auth.sessions_deleted": "\(ended)"]) }
            let spent = try await deleteAll(sessions.deleteLongSpent)
            if spent > 0 { logger.info("deleted refresh tokens spent long ago", metadata: ["auth.spent_tokens_deleted": "\(spent)"]) }
        } catch {
            logger.warning("deleting ended sessions failed; retrying later", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Puts the sessions revoked within `window` (a token's lifetime and a minute) back into Redis's
    /// set of revoked sessions when the set has lost them (``SessionRevocations/isWhole()``): Redis
    /// restarted empty, or was flushed. Without them, a token of a session that ended would pass
    /// again until it expires.
    private static func restoreRevocations(
        _ sessions: SessionStore, into revocations: SessionRevocations, within window: Duration, logger: Logger
    ) async {
        do {
            guard try await !revocations.isWhole() else { return }
            let ended = try await sessions.revoked(within: window)
            try await revocations.restore(sessionIDs: ended)
            logger.notice("restored the set of revoked sessions in Redis", metadata: ["auth.sessions_restored": "\(ended.count)"])
        } catch let error as RedisError where error.isTransient {
            // Redis is away: nothing to restore into yet (the revocation watch says so already).
        } catch {
            logger.warning(
                "restoring the set of revoked sessions in Redis failed; retrying in a second",
                metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// The result of every sign-in: the user, as they see themself, and a fresh pair of tokens.
    func signedIn(_ user: UserRecord, tokens: IssuedTokens, created: Bool? = nil, context: RPCContext) async -> AuthResult {
        AuthResult(user: await profiles.user(user, viewer: user.id, context: context), tokens: tokens, created: created)
    }

    /// Starts a new session of `user` and answers with it; the session's row is written while the
    /// profile is read, rather than one after the other.
    func startSession(_ user: UserRecord, created: Bool? = nil, context: RPCContext) async throws -> AuthResult {
        if let suspension = user.suspension { throw Self.refusal(suspension) }
        async let tokens = issuer.start(userID: user.id)
        let profile = await profiles.user(user, viewer: user.id, context: context)
        guard let issued = try await tokens else { throw Self.refusal(nil) }
        return AuthResult(user: profile, tokens: issued, created: created)
    }

    /// The answer to signing in to a suspended account: the admins' reason, when known.
    static func refusal(_ suspension: UserRecord.Suspension?) -> RPCError {
        .forbidden("this account is suspended" + (suspension.map { ": \($0.reason)" } ?? ""))
    }
}

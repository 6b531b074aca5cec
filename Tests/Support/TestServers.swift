/// The database servers of a test process: one shared Postgres and one shared Redis, started on first
/// use and stopped when the process exits, plus private ones for tests that stop or restart a server.
/// Everything they leave on disk is removed at exit (`AVIARY_TEST_KEEP_FOLDERS=1` keeps it, to look
/// at the logs), and the servers also stop if the test process is killed.
public enum TestServers {
    /// One Postgres server per test process (started lazily, random port, temp folder), shared by tests.
    /// Each test takes a database of its own with `makeDatabase()`.
    public static func postgres() async throws -> TestPostgres {
        try await SharedServers.instance.postgres()
    }

    /// One Redis server per test process, shared. Tests keep apart through key prefixes or databases.
    public static func redis() async throws -> TestRedis {
        try await SharedServers.instance.redis()
    }

    /// One SMTP server per test process, shared: tests tell their mail apart by its recipient.
    public static func smtp() async throws -> TestSMTP {
        try await SharedServers.instance.smtp()
    }

    /// An SMTP server of the caller's own, speaking TLS as `tls` says.
    public static func startPrivateSMTP(tls: TestSMTP.TLS) async throws -> TestSMTP {
        try await TestSMTP.launch(tls: tls)
    }

    /// A private Postgres server, for tests that stop or restart it. It stops when the last reference
    /// to it goes away.
    public static func startPrivatePostgres() async throws -> TestPostgres {
        try await TestPostgres.launch()
    }

    /// A private Redis server, for tests that stop or restart it. It stops when the last reference to
    /// it goes away.
    public static func startPrivateRedis() async throws -> TestRedis {
        try await TestRedis.launch()
    }
}

/// Starts each shared server once: the first caller starts it, the others await the same task (and
/// get the same error if it failed, rather than each trying again).
private actor SharedServers {
    static let instance = SharedServers()

    private var postgresStart: Task<TestPostgres, any Error>?
    private var redisStart: Task<TestRedis, any Error>?
    private var smtpStart: Task<TestSMTP, any Error>?

    func postgres() async throws -> TestPostgres {
        let start = postgresStart ?? Task { try await TestPostgres.launch() }
        postgresStart = start
        return try await start.value
    }

    func redis() async throws -> TestRedis {
        let start = redisStart ?? Task { try await TestRedis.launch() }
        redisStart = start
        return try await start.value
    }

    func smtp() async throws -> TestSMTP {
        let start = smtpStart ?? Task { try await TestSMTP.launch() }
        smtpStart = start
        return try await start.value
    }
}

import Foundation
import Logging
import NIOCore
import ServiceKit
import Testing

@Suite("ServiceConfiguration")
struct ServiceConfigurationTests {
    @Test func serviceNamesFollowTheContract() {
        #expect(ServiceName.allCases.count == 8)
        #expect(ServiceName.socialGraph.rawValue == "social-graph")
        #expect(ServiceName.socialGraph.executableName == "aviary-social-graph")
        #expect(ServiceName.socialGraph.environmentKeyPrefix == "SOCIAL_GRAPH")
        #expect(ServiceName.auth.defaultRPCPort == 7101)
        #expect(ServiceName.auth.defaultAdminPort == 7201)
        #expect(ServiceName.media.defaultRPCPort == 7107)
        #expect(ServiceName.media.defaultAdminPort == 7207)
        #expect(ServiceName(rawValue: "notifications") == .notifications)
        #expect(ServiceName(methodPrefix: "graph") == .socialGraph)
        #expect(ServiceName(methodPrefix: "moderation") == .auth)
        #expect(ServiceName(methodPrefix: "gateway") == nil)
    }

    @Test func defaultsWithNoConfiguration() throws {
        let config = try ServiceConfiguration.load(service: .timeline, environment: [:])
        #expect(config.service == .timeline)
        #expect(config.postgresURL == "postgres://aviary@127.0.0.1:5432/aviary")
        #expect(config.postgresPoolSize == 8)
        #expect(config.redisURL == "redis://127.0.0.1:6379")
        #expect(config.redisPoolSize == 8)
        #expect(config.host == "127.0.0.1")
        #expect(config.rpcPort == 7104)
        #expect(config.adminPort == 7204)
        #expect(config.nodeID == nil, "unset: leased from Postgres at start-up")
        #expect(config.serviceSecret == nil)
        #expect(config.acceptedServiceSecrets.isEmpty)
        #expect(config.logLevel == .info)
        #expect(config.logFormat == .text)
        #expect(config.maxFrameBytes == 1_048_576)
        #expect(config.eventLoops == System.coreCount)
        #expect(config.addresses(of: .auth) == ["127.0.0.1:7101"])
        #expect(config.addresses(of: .socialGraph) == ["127.0.0.1:7103"])
        #expect(config.value("AVIARY_TIMELINE_CAPACITY") == nil)
    }

    @Test func environmentValues() throws {
        let config = try ServiceConfiguration.load(
            service: .auth,
            environment: [
                "AVIARY_POSTGRES_URL": "postgresql://u:p@db:5433/aviary?sslmode=disable",
                "AVIARY_POSTGRES_POOL_SIZE": "16",
                "AVIARY_REDIS_URL": "redis://:secret@cache:6380/2",
                "AVIARY_REDIS_POOL_SIZE": "4",
                "AVIARY_HOST": "0.0.0.0",
                "AVIARY_RPC_PORT": "0",
                "AVIARY_ADMIN_PORT": "9000",
                "AVIARY_NODE_ID": "1023",
                "AVIARY_SERVICE_SECRET": "s3cret",
                "AVIARY_SERVICE_SECRETS_ACCEPTED": " old-1 , ,old-2",
                "AVIARY_LOG_LEVEL": "DEBUG",
                "AVIARY_LOG_FORMAT": "json",
                "AVIARY_MAX_FRAME_BYTES": "8388608",
                "AVIARY_EVENT_LOOPS": "3",
                "AVIARY_SOCIAL_GRAPH_ADDRESSES": "10.0.0.1:7103, 10.0.0.2:7203 ,graph.internal,[::1]:9,[fe80::1]",
                "AVIARY_TIMELINE_CAPACITY": "800",
                "PATH": "/usr/bin",
            ])
        #expect(config.postgresURL == "postgresql://u:p@db:5433/aviary?sslmode=disable")
        #expect(config.postgresPoolSize == 16)
        #expect(config.redisURL == "redis://:secret@cache:6380/2")
        #expect(config.redisPoolSize == 4)
        #expect(config.host == "0.0.0.0")
        #expect(config.rpcPort == 0)
        #expect(config.adminPort == 9000)
        #expect(config.nodeID == 1023)
        #expect(config.serviceSecret == "s3cret")
        #expect(config.acceptedServiceSecrets == ["old-1", "old-2"])
        #expect(config.logLevel == .debug)
        #expect(config.logFormat == .json)
        #expect(config.maxFrameBytes == 8_388_608)
        #expect(config.eventLoops == 3)
        #expect(
            config.addresses(of: .socialGraph) == [
                "10.0.0.1:7103", "10.0.0.2:7203", "graph.internal:7103", "[::1]:9", "[fe80::1]:7103",
            ])
        #expect(config.addresses(of: .tweets) == ["127.0.0.1:7102"])
        #expect(config.value("AVIARY_TIMELINE_CAPACITY") == "800")
        #expect(try config.integer("AVIARY_TIMELINE_CAPACITY", default: 100, in: 1...10_000) == 800)
        #expect(try config.integer("AVIARY_TIMELINE_THRESHOLD", default: 5000, in: 1...1_000_000) == 5000)
        #expect(config.value("PATH") == nil)
    }

    @Test func emptyValuesCountAsUnset() throws {
        let config = try ServiceConfiguration.load(
            service: .media,
            environment: ["AVIARY_RPC_PORT": "", "AVIARY_SERVICE_SECRET": "", "AVIARY_LOG_LEVEL": ""])
        #expect(config.rpcPort == 7107)
        #expect(config.serviceSecret == nil)
        #expect(config.logLevel == .info)
    }

    @Test func configFileWithEnvironmentOverrides() throws {
        let file = try TemporaryFile(
            contents: """
                # Aviary auth settings
                AVIARY_RPC_PORT=7301
                  AVIARY_ADMIN_PORT = 7302
                export AVIARY_LOG_LEVEL=warning
                AVIARY_SERVICE_SECRET="quoted # not a comment"
                AVIARY_REDIS_URL='redis://:pa#ss@127.0.0.1:6379'

                AVIARY_AUTH_ADDRESSES=a:1,b:2
                AVIARY_AUTH_TOKEN_TTL=900
                """)
        let config = try ServiceConfiguration.load(
            service: .auth,
            environment: ["AVIARY_CONFIG_FILE": file.path, "AVIARY_ADMIN_PORT": "8000"])
        #expect(config.rpcPort == 7301)
        #expect(config.adminPort == 8000, "the environment wins over the file")
        #expect(config.logLevel == .warning)
        #expect(config.serviceSecret == "quoted # not a comment")
        #expect(config.redisURL == "redis://:pa#ss@127.0.0.1:6379")
        #expect(config.addresses(of: .auth) == ["a:1", "b:2"])
        #expect(config.value("AVIARY_AUTH_TOKEN_TTL") == "900")
    }

    @Test func configFileErrors() throws {
        let missing = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(service: .auth, environment: ["AVIARY_CONFIG_FILE": "/nonexistent/aviary.conf"])
        }
        #expect(missing?.variable == "AVIARY_CONFIG_FILE")
        #expect(missing?.description == "AVIARY_CONFIG_FILE names '/nonexistent/aviary.conf', which cannot be read")

        let file = try TemporaryFile(contents: "AVIARY_RPC_PORT=1\nthis is not a setting\n")
        let malformed = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(service: .auth, environment: ["AVIARY_CONFIG_FILE": file.path])
        }
        #expect(malformed?.description == "AVIARY_CONFIG_FILE '\(file.path)' line 2 must be KEY=VALUE or a # comment")

        let badValue = try TemporaryFile(contents: "AVIARY_RPC_PORT=http\n")
        let fromFile = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(service: .auth, environment: ["AVIARY_CONFIG_FILE": badValue.path])
        }
        #expect(fromFile?.description == "AVIARY_RPC_PORT must be an integer 0...65535, got 'http'")
    }

    @Test(arguments: [
        ("AVIARY_RPC_PORT", "abc", "AVIARY_RPC_PORT must be an integer 0...65535, got 'abc'"),
        ("AVIARY_ADMIN_PORT", "65536", "AVIARY_ADMIN_PORT must be an integer 0...65535, got '65536'"),
        ("AVIARY_POSTGRES_POOL_SIZE", "0", "AVIARY_POSTGRES_POOL_SIZE must be an integer 1...1024, got '0'"),
        ("AVIARY_REDIS_POOL_SIZE", "-3", "AVIARY_REDIS_POOL_SIZE must be an integer 1...1024, got '-3'"),
        ("AVIARY_NODE_ID", "1024", "AVIARY_NODE_ID must be an integer 0...1023, got '1024'"),
        (
            "AVIARY_SERVICE_SECRETS_ACCEPTED", "old",
            "AVIARY_SERVICE_SECRETS_ACCEPTED needs AVIARY_SERVICE_SECRET: it lists the credentials accepted besides that one"
        ),
        (
            "AVIARY_SERVICE_SECRET", "REPLACE-ME-service-secret",
            "AVIARY_SERVICE_SECRET is still a placeholder (REPLACE-ME…): set a secret of your own, such as the output of openssl rand -hex 32"
        ),
        (
            "AVIARY_MAX_FRAME_BYTES", "1e6",
            "AVIARY_MAX_FRAME_BYTES must be an integer 1024...1073741824, got '1e6'"
        ),
        (
            "AVIARY_LOG_LEVEL", "loud",
            "AVIARY_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical, got 'loud'"
        ),
        ("AVIARY_LOG_FORMAT", "xml", "AVIARY_LOG_FORMAT must be one of text, json, got 'xml'"),
        (
            "AVIARY_POSTGRES_URL", "mysql://root:hunter2@db/x",
            "AVIARY_POSTGRES_URL must be a URL starting with postgres:// or postgresql:// (value not shown)"
        ),
        (
            "AVIARY_REDIS_URL", "127.0.0.1:6379",
            "AVIARY_REDIS_URL must be a URL starting with redis://, unix://, redis+cluster:// or redis+sentinel:// (value not shown)"
        ),
        (
            "AVIARY_MEDIA_ADDRESSES", "host:port",
            "AVIARY_MEDIA_ADDRESSES must be a comma-separated list of host:port (port 1...65535) or host names, got 'host:port'"
        ),
        (
            "AVIARY_AUTH_ADDRESSES", "::1:7101",
            "AVIARY_AUTH_ADDRESSES must be a comma-separated list of host:port (port 1...65535) or host names, got '::1:7101'"
        ),
        (
            "AVIARY_TWEETS_ADDRESSES", " , ",
            "AVIARY_TWEETS_ADDRESSES must be a comma-separated list of host:port (port 1...65535) or host names, got ' , '"
        ),
        ("AVIARY_HOST", "local host", "AVIARY_HOST must be an IP address or host name, got 'local host'"),
        ("AVIARY_EVENT_LOOPS", "0", "AVIARY_EVENT_LOOPS must be an integer 1...256, got '0'"),
        (
            "AVIARY_REDIS_URL", "unix://run/redis.sock",
            "AVIARY_REDIS_URL is not a usable Redis URL: a unix:// URL needs the socket's absolute path (value not shown)"
        ),
        (
            "AVIARY_REDIS_URL", "redis://:secret@cache:99999",
            "AVIARY_REDIS_URL is not a usable Redis URL: the port must be a number from 1 to 65535 (value not shown)"
        ),
        (
            "AVIARY_REDIS_URL", "redis+sentinel://s1,s2",
            "AVIARY_REDIS_URL is not a usable Redis URL: a redis+sentinel:// URL ends with /master, the name the sentinels know the master by (value not shown)"
        ),
        (
            "AVIARY_POSTGRES_REPLICA_URLS", "postgres://db2/aviary,db3:5432/aviary",
            "AVIARY_POSTGRES_REPLICA_URLS must be a URL starting with postgres:// or postgresql:// (value not shown)"
        ),
        ("AVIARY_POSTGRES_REPLICA_WINDOW_MS", "50", "AVIARY_POSTGRES_REPLICA_WINDOW_MS must be an integer 100...60000, got '50'"),
        ("AVIARY_REDIS_REPLICA_ACKS", "17", "AVIARY_REDIS_REPLICA_ACKS must be an integer 0...16, got '17'"),
    ])
    func invalidValuesNameTheVariable(variable: String, value: String, message: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(service: .tweets, environment: [variable: value])
        }
        #expect(error?.variable == variable)
        #expect(error?.description == message)
    }

    @Test func serviceSpecificIntegerErrors() throws {
        let config = try ServiceConfiguration.load(service: .media, environment: ["AVIARY_MEDIA_MAX_IMAGE_BYTES": "big"])
        let error = #expect(throws: ConfigurationError.self) {
            try config.integer("AVIARY_MEDIA_MAX_IMAGE_BYTES", default: 16 << 20, in: 1...(1 << 30))
        }
        #expect(error?.description == "AVIARY_MEDIA_MAX_IMAGE_BYTES must be an integer 1...1073741824, got 'big'")
    }

    @Test func descriptionMasksSecrets() throws {
        let config = try ServiceConfiguration.load(
            service: .auth,
            environment: [
                "AVIARY_POSTGRES_URL": "postgres://aviary:hunter2@db:5432/aviary",
                "AVIARY_REDIS_URL": "redis://:p@ss@cache:6379/1",
                "AVIARY_SERVICE_SECRET": "topsecret",
            ])
        let text = config.description
        #expect(!text.contains("hunter2"))
        #expect(!text.contains("p@ss"))
        #expect(!text.contains("topsecret"))
        #expect(text.contains("postgres=postgres://aviary:***@db:5432/aviary"))
        #expect(text.contains("redis=redis://:***@cache:6379/1"))
        #expect(text.contains("serviceSecret=<set>"))
        let socket = try ServiceConfiguration.load(
            service: .auth, environment: ["AVIARY_REDIS_URL": "unix://:s3cret@/run/redis/redis.sock?db=2"])
        #expect(socket.redisURL == "unix://:s3cret@/run/redis/redis.sock?db=2")
        #expect(socket.description.contains("redis=unix://:***@/run/redis/redis.sock?db=2"))
    }
}

/// A file in the temporary folder, deleted when the value goes away.
final class TemporaryFile {
    let path: String

    init(contents: String) throws {
        self.path = FileManager.default.temporaryDirectory
            .appendingPathComponent("aviary-test-\(UUID().uuidString).conf").path
        try contents.write(toFile: self.path, atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

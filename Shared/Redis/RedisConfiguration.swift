/// The TCP address of one Redis server (or Sentinel).
public struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// What kind of Redis a configuration names.
public enum RedisDeployment: Sendable, Equatable {
    /// One server at `host` and `port` (or `socketPath`).
    case server
    /// A Redis Cluster, found through any of `seeds`: commands go to the master of their key's slot
    /// (``RedisClient``).
    case cluster(seeds: [RedisEndpoint])
    /// A master watched by Sentinel: each new connection asks `sentinels` where master `master` is
    /// now, so connections made after a failover reach the promoted replica.
    case sentinel(sentinels: [RedisEndpoint], master: String)
}

/// Where and how to connect to Redis, for `RedisClient` and `RedisSubscriber`.
public struct RedisConfiguration: Sendable, Equatable {
    /// One server, a cluster or a Sentinel set. Default `.server`; for the others `host` and `port`
    /// are those of the first seed or sentinel, until a connection finds the server it needs.
    public var deployment: RedisDeployment = .server
    /// Host name or IP address. Default `"127.0.0.1"`.
    public var host: String
    /// TCP port. Default `6379`.
    public var port: Int
    /// A Unix domain socket to connect through instead of `host` and `port`, for a Redis on the same
    /// machine: a command then skips the TCP stack on both sides. Default `nil`.
    public var socketPath: String?
    /// ACL user name for `AUTH username password` (Redis 6+); `nil` sends `AUTH password`. Default `nil`.
    public var username: String?
    /// Password sent with `AUTH` right after connecting; `nil` skips `AUTH`. Default `nil`.
    public var password: String?
    /// Database selected with `SELECT` right after connecting (skipped for 0). Default `0`.
    public var database: Int
    /// Most connections `RedisClient` shares between concurrent commands, and most it keeps idle for
    /// blocking commands. Default `8`.
    public var poolSize: Int
    /// Longest wait for the TCP connection (and `AUTH`/`SELECT`) to complete. Default 5 seconds.
    public var connectTimeout: Duration
    /// Longest wait for a command's reply; a command that exceeds it fails with `.timeout` (and so
    /// does every command behind it on its connection, which is discarded). Default 1 second: Redis
    /// answers in microseconds, so a second without an answer is a stalled server, whose callers
    /// should fall back rather than wait (a blocking command's client adds its block time).
    public var commandTimeout: Duration
    /// How long commands are refused at once after one timed out or could not connect, before one
    /// probes (``RedisClient``). Default 200 ms.
    public var breakerPause: Duration

    /// Creates a configuration; every parameter has the documented default.
    public init(
        host: String = "127.0.0.1",
        port: Int = 6379,
        socketPath: String? = nil,
        username: String? = nil,
        password: String? = nil,
        database: Int = 0,
        poolSize: Int = 8,
        connectTimeout: Duration = .seconds(5),
        commandTimeout: Duration = .seconds(1),
        breakerPause: Duration = .milliseconds(200)
    ) {
        self.host = host
        self.port = port
        self.socketPath = socketPath
        self.username = username
        self.password = password
        self.database = database
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.breakerPause = breakerPause
    }

    /// Parses `redis://[[username]:password@]host[:port][/database]`, or
    /// `unix://[[username]:password@]/path/to/redis.sock[?db=database]` for a Unix domain socket, or
    /// `redis+cluster://[[username]:password@]host:port,host:port…` for a Redis Cluster (its seed
    /// nodes; any one that answers will do), or
    /// `redis+sentinel://[[username]:password@]host:port,host:port…/master` for a master watched by
    /// Sentinel (the sentinels, and the name they know the master by; the credentials are the
    /// master's). The port defaults to 6379 (26379 for sentinels) and the database to 0. User name
    /// and password may be percent-encoded. Other settings keep their defaults.
    ///
    /// - Throws: `RedisError` with code `.invalidConfiguration`.
    public init(url: String, poolSize: Int = 8) throws {
        let schemes = ["redis://", "unix://", "redis+cluster://", "redis+sentinel://"]
        guard let scheme = schemes.first(where: url.hasPrefix) else {
            throw Self.invalid("the URL must start with redis://, unix://, redis+cluster:// or redis+sentinel://")
        }
        var rest = Substring(url.dropFirst(scheme.count))
        var username: String?
        var password: String?
        // A socket path may hold an @; credentials end before the path's first slash.
        let authority = scheme == "unix://" ? rest.prefix { $0 != "/" } : rest
        if let at = authority.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":") else {
                throw Self.invalid("credentials must be written user:password@ or :password@")
            }
            guard let decodedUser = String(userInfo[..<colon]).removingPercentEncoding,
                let decodedSecret = String(userInfo[userInfo.index(after: colon)...]).removingPercentEncoding
            else { throw Self.invalid("the user name or password is badly percent-encoded") }
            username = decodedUser.isEmpty ? nil : decodedUser
            password = decodedSecret
        }
        if scheme == "unix://" {
            try self.init(socketURLPath: rest, username: username, password: password, poolSize: poolSize)
            return
        }
        if scheme != "redis://" {
            try self.init(
                endpointList: rest, sentinel: scheme == "redis+sentinel://", username: username, password: password,
                poolSize: poolSize)
            return
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard let number = Int(path), number >= 0 else {
                    throw Self.invalid("the database must be a number")
                }
                database = number
            }
        }
        let endpoint = try Self.endpoint(rest, defaultPort: 6379)
        self.init(
            host: endpoint.host, port: endpoint.port, username: username, password: password, database: database,
            poolSize: poolSize)
    }

    /// The rest of a `redis+cluster://` or `redis+sentinel://` URL after its credentials.
    private init(
        endpointList rest: Substring, sentinel: Bool, username: String?, password: String?, poolSize: Int
    ) throws {
        var list = rest
        var master: String?
        if let slash = rest.firstIndex(of: "/") {
            list = rest[..<slash]
            let path = rest[rest.index(after: slash)...]
            if sentinel {
                guard let name = String(path).removingPercentEncoding, !name.isEmpty, !name.contains("/") else {
                    throw Self.invalid("a redis+sentinel:// URL ends with /master, the name the sentinels know the master by")
                }
                master = name
            } else if !path.isEmpty && path != "0" {
                throw Self.invalid("a Redis Cluster has only database 0")
            }
        }
        let endpoints = try list.split(separator: ",", omittingEmptySubsequences: false).map {
            try Self.endpoint($0, defaultPort: sentinel ? 26379 : 6379)
        }
        let deployment: RedisDeployment
        if sentinel {
            guard let master else {
                throw Self.invalid("a redis+sentinel:// URL ends with /master, the name the sentinels know the master by")
            }
            deployment = .sentinel(sentinels: endpoints, master: master)
        } else {
            deployment = .cluster(seeds: endpoints)
        }
        self.init(host: endpoints[0].host, port: endpoints[0].port, username: username, password: password, poolSize: poolSize)
        self.deployment = deployment
    }

    /// `host[:port]` or `[IPv6][:port]`.
    private static func endpoint(_ text: Substring, defaultPort: Int) throws -> RedisEndpoint {
        let host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw Self.invalid("unterminated IPv6 address")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw Self.invalid("unexpected text after the IPv6 address")
                }
                portText = after.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty else { throw Self.invalid("the host is missing") }
        var port = defaultPort
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw Self.invalid("the port must be a number from 1 to 65535")
            }
            port = number
        }
        return RedisEndpoint(host: String(host), port: port)
    }

    /// Whether channels are sharded (on a cluster): a message is published with `SPUBLISH` to the
    /// shard that owns its channel's slot and heard there with `SSUBSCRIBE`, rather than passed to
    /// every node of the cluster as a `PUBLISH` is.
    public var hasShardedChannels: Bool {
        if case .cluster = deployment { true } else { false }
    }

    /// The command that publishes `payload` on `channel`: `PUBLISH`, or `SPUBLISH` where channels
    /// are sharded (``hasShardedChannels``), as ``RedisSubscriber`` listens.
    public func publish(_ payload: RedisArgument, to channel: String) -> [RedisArgument] {
        [hasShardedChannels ? "SPUBLISH" : "PUBLISH", RedisArgument(channel), payload]
    }

    /// This configuration for one server of its cluster or Sentinel set.
    func server(at endpoint: RedisEndpoint) -> RedisConfiguration {
        var configuration = self
        configuration.deployment = .server
        configuration.host = endpoint.host
        configuration.port = endpoint.port
        configuration.socketPath = nil
        return configuration
    }

    /// The rest of a `unix://` URL after its credentials: an absolute path, then `?db=N` if any.
    private init(
        socketURLPath rest: Substring, username: String?, password: String?, poolSize: Int
    ) throws {
        var path = rest
        var database = 0
        if let question = rest.firstIndex(of: "?") {
            path = rest[..<question]
            let query = rest[rest.index(after: question)...]
            guard query.hasPrefix("db="), let number = Int(query.dropFirst(3)), number >= 0 else {
                throw Self.invalid("a unix:// URL takes only ?db= with a database number")
            }
            database = number
        }
        guard path.hasPrefix("/"), path.count > 1 else {
            throw Self.invalid("a unix:// URL needs the socket's absolute path")
        }
        guard let decodedPath = String(path).removingPercentEncoding, !decodedPath.utf8.contains(0) else {
            throw Self.invalid("the socket path is badly percent-encoded")
        }
        self.init(
            socketPath: decodedPath, username: username, password: password, database: database,
            poolSize: poolSize)
    }

    /// The server, for logs: the socket's path, or host and port; the seeds of a cluster, the
    /// sentinels and master of a Sentinel set.
    public var server: String {
        switch deployment {
        case .server: socketPath ?? "\(host):\(port)"
        case .cluster(let seeds): "cluster " + seeds.map(\.description).joined(separator: ",")
        case .sentinel(let sentinels, let master): "sentinel " + sentinels.map(\.description).joined(separator: ",") + "/\(master)"
        }
    }

    /// What a new connection sends first: `AUTH` when there is a password, `SELECT` for a database
    /// other than 0.
    var handshakeCommands: [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        if let password {
            let user = username.map { [RedisArgument($0)] } ?? []
            commands.append(["AUTH"] + user + [RedisArgument(password)])
        }
        if database != 0 {
            commands.append(["SELECT", RedisArgument(database)])
        }
        return commands
    }

    private static func invalid(_ reason: String) -> RedisError {
        RedisError(.invalidConfiguration, detail: reason)
    }
}

extension RedisConfiguration: CustomStringConvertible {
    /// The configuration as a URL with the password masked, safe to log.
    public var description: String {
        let credentials = password == nil ? "" : "\(username ?? ""):***@"
        switch deployment {
        case .server: break
        case .cluster(let seeds):
            return "redis+cluster://\(credentials)\(seeds.map(\.description).joined(separator: ",")) (poolSize: \(poolSize))"
        case .sentinel(let sentinels, let master):
            return "redis+sentinel://\(credentials)\(sentinels.map(\.description).joined(separator: ","))/\(master) (poolSize: \(poolSize))"
        }
        if let socketPath {
            return "unix://\(credentials)\(socketPath)?db=\(database) (poolSize: \(poolSize))"
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "redis://\(credentials)\(hostPart):\(port)/\(database) (poolSize: \(poolSize))"
    }
}

extension String {
    /// Decodes `%XX` escapes; `nil` when an escape is malformed or the result is not UTF-8.
    fileprivate var removingPercentEncoding: String? {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue),
                let low = iterator.next().flatMap(Self.hexValue)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

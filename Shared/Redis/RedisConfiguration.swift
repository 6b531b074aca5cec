/// Where and how to connect to Redis, for `RedisClient` and `RedisSubscriber`.
public struct RedisConfiguration: Sendable, Equatable {
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
    /// `unix://[[username]:password@]/path/to/redis.sock[?db=database]` for a Unix domain socket; the
    /// port defaults to 6379 and the database to 0. User name and password may be percent-encoded.
    /// Other settings keep their defaults.
    ///
    /// - Throws: `RedisError` with code `.invalidConfiguration`.
    public init(url: String, poolSize: Int = 8) throws {
        let schemes = ["redis://", "unix://"]
        guard let scheme = schemes.first(where: url.hasPrefix) else {
            throw Self.invalid("the URL must start with redis:// or unix://")
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
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw Self.invalid("unterminated IPv6 address")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw Self.invalid("unexpected text after the IPv6 address")
                }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw Self.invalid("the host is missing") }
        var port = 6379
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw Self.invalid("the port must be a number from 1 to 65535")
            }
            port = number
        }
        self.init(
            host: String(host), port: port, username: username, password: password, database: database,
            poolSize: poolSize)
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

    /// The server, for logs: the socket's path, or host and port.
    public var server: String {
        socketPath ?? "\(host):\(port)"
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

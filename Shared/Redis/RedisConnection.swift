import CHiredis

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One blocking hiredis connection (`redisContext`), for `RedisSubscriber`, which waits on it with
/// `poll(2)` on its own thread. Every method blocks: never call one on an event loop.
///
/// `@unchecked Sendable` because the context is never used by two threads at once: the subscriber
/// keeps its connection on its own thread.
final class RedisConnection: @unchecked Sendable {
    /// A failed exchange. hiredis contexts cannot be reused after an error, so the connection is broken.
    typealias Failure = RedisConnectionFailure

    private let context: UnsafeMutablePointer<redisContext>
    /// Set after any hiredis error: the connection must then be dropped, never reused.
    private(set) var isBroken = false

    private init(context: UnsafeMutablePointer<redisContext>) {
        self.context = context
    }

    deinit {
        redisFree(context)
    }

    /// The socket, for `poll(2)`.
    var fileDescriptor: Int32 {
        context.pointee.fd
    }

    /// Connects, sends `AUTH` and `SELECT` as configured, then sets the command timeout on the socket.
    /// For a cluster, to the first seed that answers (any node hears every `PUBLISH`); for a
    /// Sentinel set, to the master the sentinels name (``SentinelLookup``).
    static func connect(_ configuration: RedisConfiguration) throws(RedisError) -> RedisConnection {
        switch configuration.deployment {
        case .server:
            return try connect(server: configuration)
        case .cluster(let seeds):
            var last = RedisError(.connectionFailed, detail: "the cluster has no seeds")
            for seed in seeds {
                do {
                    return try connect(server: configuration.server(at: seed))
                } catch {
                    last = error
                }
            }
            throw last
        case .sentinel(let sentinels, let master):
            var failures: [String] = []
            for sentinel in sentinels {
                do {
                    let asked = try connect(server: SentinelLookup.sentinel(sentinel, of: configuration))
                    guard let address = SentinelLookup.address(in: try asked.execute([SentinelLookup.addressQuery(master)])[0]) else {
                        failures.append("\(sentinel) does not know it")
                        continue
                    }
                    let connection = try connect(server: configuration.server(at: address))
                    guard SentinelLookup.isMaster(try connection.execute([["ROLE"]])[0]) else {
                        failures.append("\(sentinel) named \(address), which is not a master")
                        continue
                    }
                    return connection
                } catch let failure as Failure {
                    failures.append("\(sentinel): \(String(reflecting: failure.error))")
                } catch {
                    failures.append("\(sentinel): \(String(reflecting: error))")
                }
            }
            throw SentinelLookup.notFound(master, failures)
        }
    }

    private static func connect(server configuration: RedisConfiguration) throws(RedisError) -> RedisConnection {
        Posix.ignoreSIGPIPE
        let timeout = timeval(configuration.connectTimeout)
        let context =
            if let socketPath = configuration.socketPath {
                redisConnectUnixWithTimeout(socketPath, timeout)
            } else {
                redisConnectWithTimeout(configuration.host, Int32(configuration.port), timeout)
            }
        guard let context else { throw RedisError(.connectionFailed, detail: "hiredis could not allocate a context") }
        let connection = RedisConnection(context: context)
        guard context.pointee.err == 0 else {
            throw RedisError(.connectionFailed, detail: connection.errorString)
        }
        // The connect timeout also bounds the handshake; the command timeout replaces it afterwards.
        guard redisSetTimeout(context, timeval(configuration.connectTimeout)) == REDIS_OK else {
            throw RedisError(
                .connectionFailed, detail: "setting the socket timeout failed: \(connection.errorString)")
        }
        if configuration.socketPath == nil { _ = redisEnableKeepAlive(context) }

        let handshake = configuration.handshakeCommands
        if !handshake.isEmpty {
            let replies: [RESPValue]
            do {
                replies = try connection.execute(handshake)
            } catch {
                throw RedisError(
                    .connectionFailed, detail: "handshake failed: \(String(reflecting: error.error))")
            }
            for case .error(let message) in replies {
                throw RedisError(.serverError, serverMessage: message, detail: "AUTH or SELECT was refused")
            }
        }
        guard redisSetTimeout(context, timeval(configuration.commandTimeout)) == REDIS_OK else {
            throw RedisError(
                .connectionFailed, detail: "setting the socket timeout failed: \(connection.errorString)")
        }
        return connection
    }

    /// Sends every command, then reads one reply per command: a single round trip for a pipeline.
    /// Error replies are returned in place as `.error`.
    func execute(_ commands: [[RedisArgument]]) throws(Failure) -> [RESPValue] {
        for command in commands {
            try append(command)
        }
        var somethingWritten = false
        do {
            while try !flushOnce() {
                somethingWritten = true
            }
        } catch {
            // Redis runs only complete commands, so a single command whose write failed never ran;
            // in a pipeline the commands before the failure may have.
            throw Failure(error: error.error, requestMayHaveArrived: commands.count > 1 && somethingWritten)
        }
        var replies: [RESPValue] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            replies.append(try readReply())
        }
        return replies
    }

    /// Adds a command to hiredis's output buffer, with explicit lengths so any bytes are allowed.
    func append(_ command: [RedisArgument]) throws(Failure) {
        var joined: [UInt8] = []
        var lengths: [Int] = []
        joined.reserveCapacity(command.reduce(1) { $0 + $1.bytes.count })
        for argument in command {
            joined.append(contentsOf: argument.bytes)
            lengths.append(argument.bytes.count)
        }
        // A trailing byte keeps the buffer non-empty, so its base address exists even for empty arguments.
        joined.append(0)
        let status = joined.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { base in
                var offset = 0
                var pointers: [UnsafePointer<CChar>?] = []
                pointers.reserveCapacity(lengths.count)
                for length in lengths {
                    pointers.append(base + offset)
                    offset += length
                }
                return redisAppendCommandArgv(
                    context, Int32(lengths.count), &pointers, lengths.map { size_t($0) })
            }
        }
        guard status == REDIS_OK else {
            throw failure(requestMayHaveArrived: false)
        }
    }

    /// Writes as much of the output buffer as one `write(2)` takes; returns whether it is now empty.
    func flushOnce() throws(Failure) -> Bool {
        var done: Int32 = 0
        guard redisBufferWrite(context, &done) == REDIS_OK else {
            throw failure(requestMayHaveArrived: true)
        }
        return done != 0
    }

    /// Blocks until the next reply has arrived (or the command timeout passes).
    func readReply() throws(Failure) -> RESPValue {
        while true {
            if let reply = try nextBufferedReply() {
                return reply
            }
            try readFromSocket()
        }
    }

    /// One `read(2)` into hiredis's reader: blocks unless `poll` said the socket is readable.
    func readFromSocket() throws(Failure) {
        guard redisBufferRead(context) == REDIS_OK else {
            throw failure(requestMayHaveArrived: true)
        }
    }

    /// The next complete reply already read from the socket, if any; never blocks.
    func nextBufferedReply() throws(Failure) -> RESPValue? {
        var reply: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &reply) == REDIS_OK else {
            throw failure(requestMayHaveArrived: true)
        }
        guard let reply else { return nil }
        defer { freeReplyObject(reply) }
        return RESPValue(copying: reply.assumingMemoryBound(to: redisReply.self))
    }

    /// Marks the connection broken and describes hiredis's error; reads `errno` first, before any
    /// other call can change it.
    private func failure(requestMayHaveArrived: Bool) -> Failure {
        let errorNumber = Posix.errorNumber
        isBroken = true
        let code: RedisError.Code
        switch context.pointee.err {
        case REDIS_ERR_IO where errorNumber == EAGAIN || errorNumber == EWOULDBLOCK:
            code = .timeout  // SO_RCVTIMEO / SO_SNDTIMEO expired
        case REDIS_ERR_PROTOCOL:
            code = .protocolError
        default:
            code = .connectionFailed
        }
        return Failure(
            error: RedisError(code, detail: errorString), requestMayHaveArrived: requestMayHaveArrived)
    }

    private var errorString: String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

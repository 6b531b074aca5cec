/// An error from the Redis client or subscriber.
///
/// Like postgres-nio's `PSQLError`, `description` is deliberately generic so that keys, values and
/// passwords never leak into logs or responses by accident; the details (the server's error reply,
/// hiredis's error string) are only in `debugDescription`, which `String(reflecting:)` returns.
public struct RedisError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is. Extensible: switch with a `default` case.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connectionFailed, serverError, protocolError, timeout, closed, invalidConfiguration
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// Connecting failed, or the connection broke while a command was in flight.
        public static let connectionFailed = Code(.connectionFailed)
        /// Redis answered with an error reply (`-ERR …`, `-WRONGTYPE …`, `-NOSCRIPT …`).
        public static let serverError = Code(.serverError)
        /// The bytes from the server were not valid RESP.
        public static let protocolError = Code(.protocolError)
        /// The server did not answer within the configured command timeout.
        public static let timeout = Code(.timeout)
        /// The client or subscriber was shut down.
        public static let closed = Code(.closed)
        /// A `redis://` URL could not be parsed.
        public static let invalidConfiguration = Code(.invalidConfiguration)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The server's error reply, such as `"WRONGTYPE Operation against a key holding the wrong kind of value"`,
    /// when `code` is `.serverError`.
    public var serverMessage: String?
    /// hiredis's error string or another internal detail; shown only by `debugDescription`.
    var detail: String?

    /// Why a configuration was refused, for `.invalidConfiguration` (it never quotes the URL or a
    /// password); nil for any other code.
    public var configurationProblem: String? {
        code == .invalidConfiguration ? detail : nil
    }

    init(_ code: Code, serverMessage: String? = nil, detail: String? = nil) {
        self.code = code
        self.serverMessage = serverMessage
        self.detail = detail
    }

    /// The error reply `message` that Redis gave a command, as an error to throw.
    public static func refusal(_ message: String) -> RedisError {
        RedisError(.serverError, serverMessage: message)
    }

    /// Throws the first error reply among a pipeline's `replies`, which come back in place (as
    /// ``RedisClient/send(_:)`` throws a single command's).
    public static func throwFirstRefusal(in replies: some Sequence<RESPValue>) throws(RedisError) {
        for reply in replies {
            if let message = reply.errorMessage { throw refusal(message) }
        }
    }

    /// Whether the same command may well succeed later: Redis could not be reached or did not
    /// answer, or it answered that it cannot serve now (still loading its data after a restart,
    /// busy with a script, a replica cut off from its primary or not writable during a failover).
    public var isTransient: Bool {
        switch code {
        case .connectionFailed, .timeout, .closed: true
        case .serverError: serverMessage.map { Self.notNowReplies.contains(String($0.prefix { $0 != " " })) } ?? false
        default: false
        }
    }

    private static let notNowReplies: Set<String> = [
        "LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS",
    ]

    public var description: String {
        "RedisError(code: \(code)) – details are hidden to avoid leaking data; use String(reflecting:) to see them"
    }

    public var debugDescription: String {
        var text = "RedisError(code: \(code)"
        if let serverMessage { text += ", serverMessage: \(serverMessage)" }
        if let detail { text += ", detail: \(detail)" }
        return text + ")"
    }
}

/// Why a request failed on a connection that can no longer be used.
struct RedisConnectionFailure: Error {
    var error: RedisError
    /// Whether Redis may have received (and run) the request; `false` makes sending it again safe.
    var requestMayHaveArrived: Bool
}

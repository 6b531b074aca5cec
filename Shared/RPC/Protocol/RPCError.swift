import AviaryJSON

/// A JSON-RPC error as it travels on the wire: the standard codes of JSON-RPC 2.0 and the
/// application codes of the contract (§1), with `data.reason` naming the application case.
public struct RPCError: Error, Sendable, Hashable, Codable {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// `data.reason` of an application error.
    public var reason: String? { data?["reason"]?.stringValue }
    /// `data.field` of a validation or conflict error.
    public var field: String? { data?["field"]?.stringValue }
}

extension RPCError {
    public static func parseError(_ message: String = "parse error: the frame is not valid JSON") -> RPCError {
        RPCError(code: -32700, message: message)
    }
    public static func invalidRequest(_ message: String = "invalid request") -> RPCError {
        RPCError(code: -32600, message: message)
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: -32601, message: "method not found: \(method.prefix(100))")
    }
    public static func invalidParams(_ message: String, field: String? = nil) -> RPCError {
        RPCError(code: -32602, message: message, data: field.map { ["field": .string($0)] })
    }
    public static func internalError(_ message: String = "internal error") -> RPCError {
        RPCError(code: -32603, message: message)
    }

    private static func application(_ code: Int, _ reason: String, _ message: String, _ extra: [String: JSONValue] = [:])
        -> RPCError
    {
        var data = extra
        data["reason"] = .string(reason)
        return RPCError(code: code, message: message, data: .object(data))
    }

    public static func unauthenticated(_ message: String = "a valid access token is required") -> RPCError {
        application(-32001, "unauthenticated", message)
    }
    public static func forbidden(_ message: String) -> RPCError {
        application(-32003, "forbidden", message)
    }
    public static func notFound(_ message: String) -> RPCError {
        application(-32004, "not_found", message)
    }
    public static func conflict(_ message: String, field: String? = nil) -> RPCError {
        application(-32009, "conflict", message, field.map { ["field": .string($0)] } ?? [:])
    }
    public static func validation(_ message: String, field: String) -> RPCError {
        application(-32022, "validation", message, ["field": .string(field)])
    }
    public static func rateLimited(retryAfterMs: Int64, _ message: String = "too many calls; retry later") -> RPCError {
        application(-32029, "rate_limited", message, ["retryAfterMs": .int(retryAfterMs)])
    }
    public static func tooLarge(_ message: String) -> RPCError {
        application(-32013, "too_large", message)
    }
    public static func unavailable(_ message: String) -> RPCError {
        application(-32050, "unavailable", message)
    }
    public static func timeout(_ message: String = "the call's time budget ran out") -> RPCError {
        application(-32051, "timeout", message)
    }
}

/// An error that knows its wire form. Libraries' errors (storage, clients) conform where the
/// mapping is theirs to make; anything else becomes an internal error and is only logged.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError: RPCErrorConvertible {
    public var rpcError: RPCError { self }
}

import AviaryJSON
import Foundation

/// The envelope of one JSON-RPC request, read in one pass over the frame's bytes without decoding
/// its params beyond `_meta`: the typed params are decoded later from their own bytes
/// (``paramsRange``), so a frame is parsed once, not once per layer.
struct RequestHeader {
    enum ParamsShape { case absent, object, array, other }

    /// `nil` when the request has no `id` member, so it is a notification.
    var id: JSONValue?
    var method: String?
    var params: ParamsShape = .absent
    /// Where `params` lies in the frame, when it is present.
    var paramsRange: Range<Int>?
    /// `params._meta`, read leniently: members of the wrong type are left out.
    var meta = RequestMeta()
    /// Why the request is invalid, if it is; answered with -32600.
    var problem: String?

    var isNotification: Bool { id == nil }

    /// Reads a request frame; a frame that is not JSON throws a parse error.
    static func decode(_ frame: Data) throws(RPCError) -> RequestHeader {
        let outcome = frame.withUnsafeBytes { bytes -> Result<RequestHeader, JSONScanner.Failure> in
            var scanner = JSONScanner(bytes)
            return Result { () throws(JSONScanner.Failure) in try read(&scanner) }
        }
        return try outcome.mapError(\.rpcError).get()
    }

    private static func read(_ scanner: inout JSONScanner) throws(JSONScanner.Failure) -> RequestHeader {
        var header = RequestHeader()
        guard scanner.peek() == 0x7B else {
            try scanner.skipValue(depth: 0)
            try scanner.expectEnd()
            header.id = .null
            header.problem = "a request must be a JSON object"
            return header
        }
        var version: String?
        var idProblem = false
        var methodIsString = false
        var members = Set<String>()
        var givenTwice: String?
        try scanner.object(depth: 0) { (key, scanner: inout JSONScanner) throws(JSONScanner.Failure) in
            if Self.members.contains(key), !members.insert(key).inserted, givenTwice == nil { givenTwice = key }
            switch key {
            case "jsonrpc":
                version = scanner.peek() == 0x22 ? try scanner.string() : nil
                if version == nil { try scanner.skipValue(depth: 1) }
            case "id":
                (header.id, idProblem) = try readID(&scanner)
            case "method":
                methodIsString = scanner.peek() == 0x22
                header.method = methodIsString ? try scanner.string() : nil
                if !methodIsString { try scanner.skipValue(depth: 1) }
            case "params":
                switch scanner.peek() {
                case 0x7B:
                    header.params = .object
                    let start = scanner.index
                    try readParams(&scanner, meta: &header.meta)
                    header.paramsRange = start..<scanner.index
                case 0x5B: header.params = .array; try scanner.skipValue(depth: 1)
                default: header.params = .other; try scanner.skipValue(depth: 1)
                }
            default:
                try scanner.skipValue(depth: 1)
            }
        }
        try scanner.expectEnd()
        if let givenTwice {
            // Which of the two counts is each reader's guess (an edge's, a service's): neither does.
            header.problem = "'\(givenTwice)' is given twice"
        } else if idProblem {
            header.problem = "'id' must be a string, a number or null"
        } else if version != "2.0" {
            header.problem = "'jsonrpc' must be \"2.0\""
        } else if !methodIsString {
            header.problem = "'method' must be a string"
        } else if case .other = header.params {
            // Not a request at all, so not a notification either: answered even without an id.
            header.problem = "'params' must be an object"
        }
        return header
    }

    /// The members of a request.
    private static let members: Set<String> = ["jsonrpc", "id", "method", "params"]

    /// An id, and whether it is of a kind JSON-RPC refuses (an object, an array, a boolean).
    private static func readID(_ scanner: inout JSONScanner) throws(JSONScanner.Failure) -> (JSONValue, Bool) {
        switch scanner.peek() ?? 0 {
        case 0x22: return (.string(try scanner.string()), false)
        case 0x6E: try scanner.skipValue(depth: 1); return (.null, false)
        case 0x2D, 0x30...0x39: return (try scanner.numberValue(), false)
        default: try scanner.skipValue(depth: 1); return (.null, true)
        }
    }

    /// Walks the params object, reading `_meta` and stepping over everything else.
    private static func readParams(_ scanner: inout JSONScanner, meta: inout RequestMeta) throws(JSONScanner.Failure) {
        try scanner.object(depth: 1) { (key, scanner: inout JSONScanner) throws(JSONScanner.Failure) in
            guard key == "_meta", scanner.peek() == 0x7B else {
                try scanner.skipValue(depth: 2)
                return
            }
            try scanner.object(depth: 2) { (key, scanner: inout JSONScanner) throws(JSONScanner.Failure) in
                let isString = scanner.peek() == 0x22
                switch key {
                case "token" where isString: meta.token = try scanner.string()
                case "service" where isString: meta.service = try scanner.string()
                case "traceparent" where isString: meta.traceparent = try scanner.string()
                case "clientAddress" where isString: meta.clientAddress = try scanner.string()
                case "timeoutMs" where scanner.peek().map({ $0 == 0x2D || (0x30...0x39).contains($0) }) == true:
                    meta.timeoutMs = try scanner.numberValue().intValue
                default: try scanner.skipValue(depth: 3)
                }
            }
        }
    }

    private init() {}
}

extension DecodingError {
    /// A message for a client log that names the parameter and what was expected.
    var parameterMessage: (message: String, field: String?) {
        func path(_ codingPath: [any CodingKey]) -> String? {
            let names = codingPath.filter { $0.stringValue != "params" }.map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }
            guard !names.isEmpty else { return nil }
            return names.reduce("") { result, name in
                name.hasPrefix("[") || result.isEmpty ? result + name : result + "." + name
            }
        }
        switch self {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key]) ?? key.stringValue
            return ("missing parameter '\(field)'", field)
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            return ("parameter '\(field ?? "params")' must be \(Self.describe(type)), not null", field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if field == nil { return ("params must be \(Self.describe(type))", nil) }
            return ("parameter '\(field!)' must be \(Self.describe(type))", field)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            return ("parameter '\(field ?? "params")' is invalid: \(context.debugDescription.prefix(200))", field)
        @unknown default:
            return ("invalid params", nil)
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is UInt.Type, is UInt64.Type, is UInt32.Type:
            "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

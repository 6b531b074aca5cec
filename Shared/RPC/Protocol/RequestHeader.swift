import Foundation

/// The envelope of one JSON-RPC request, read without touching its params beyond `_meta`:
/// the typed params are decoded later, straight from the same frame bytes.
struct RequestHeader: Decodable {
    enum ParamsShape { case absent, object, array, other }

    /// `nil` when the request has no `id` member, so it is a notification.
    var id: JSONValue?
    var method: String?
    var params: ParamsShape = .absent
    var meta: JSONValue?
    /// Why the request is invalid, if it is; answered with -32600.
    var problem: String?

    var isNotification: Bool { id == nil }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        if container.contains(AnyKey("id")) {
            let id = (try? container.decode(JSONValue.self, forKey: AnyKey("id"))) ?? .null
            switch id {
            case .string, .int, .double, .null: self.id = id
            default:
                self.id = .null
                problem = "'id' must be a string, a number or null"
            }
        }
        let version = try? container.decodeIfPresent(JSONValue.self, forKey: AnyKey("jsonrpc"))
        if version != .string("2.0") {
            problem = problem ?? "'jsonrpc' must be \"2.0\""
        }
        switch try? container.decodeIfPresent(JSONValue.self, forKey: AnyKey("method")) {
        case .string(let name)?: method = name
        default: problem = problem ?? "'method' must be a string"
        }
        if container.contains(AnyKey("params")) {
            let probe = try container.decode(ParamsProbe.self, forKey: AnyKey("params"))
            params = probe.shape
            meta = probe.meta
        }
    }

    /// Reads a request frame; a frame that is not JSON throws a parse error.
    static func decode(_ frame: Data) throws(RPCError) -> RequestHeader {
        do {
            return try JSONDecoder().decode(RequestHeader.self, from: frame)
        } catch let error as DecodingError {
            if case .typeMismatch = error {
                var header = RequestHeader()
                header.id = .null
                header.problem = "a request must be a JSON object"
                return header
            }
            throw RPCError.parseError()
        } catch {
            throw RPCError.parseError()
        }
    }

    private init() {}
}

/// Learns the shape of `params` and pulls out `_meta`, ignoring every other member.
private struct ParamsProbe: Decodable {
    var shape: RequestHeader.ParamsShape = .other
    var meta: JSONValue?

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            shape = .object
            meta = try? object.decodeIfPresent(JSONValue.self, forKey: AnyKey("_meta"))
        } else if (try? decoder.unkeyedContainer()) != nil {
            shape = .array
        }
    }
}

/// A coding key for any member name.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

/// Decodes the typed params of a request from the whole frame.
struct ParamsEnvelope<Params: Decodable>: Decodable {
    var params: Params

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        if container.contains(AnyKey("params")) {
            params = try container.decode(Params.self, forKey: AnyKey("params"))
        } else {
            params = try JSONCoding.decoder().decode(Params.self, from: Data("{}".utf8))
        }
    }
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

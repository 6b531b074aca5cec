import AviaryJSON
import Foundation
import Locking
import RPC

/// Holds a stack's answers to the contract: each result is checked against the result schema its
/// method publishes in `rpc.discover` (the JSON Schema subset `JSONSchema` writes), so a handler
/// that answers something its OpenRPC document does not describe fails the test that called it.
final class ResultSchemas: Sendable {
    private let documents = Locked<[String: [String: JSONValue]]>([:])

    /// Throws when `result` of `method`, answered by `client`, does not match the method's schema.
    func check(_ result: JSONValue, of method: String, from client: RPCClient) async throws {
        guard let schema = try await schema(of: method, from: client) else {
            throw TestSupportError("\(method) is not in its service's rpc.discover")
        }
        let problems = Self.problems(result, against: schema, at: "result")
        if !problems.isEmpty {
            throw TestSupportError("\(method) answered outside its published schema:\n" + problems.joined(separator: "\n"))
        }
    }

    private func schema(of method: String, from client: RPCClient) async throws -> JSONValue? {
        let prefix = String(method.prefix { $0 != "." })
        if let schemas = documents.withLock({ $0[prefix] }) { return schemas[method] }
        let document = try await client.call("rpc.discover", params: [String: JSONValue](), as: JSONValue.self)
        var schemas: [String: JSONValue] = [:]
        for entry in document["methods"]?.arrayValue ?? [] {
            if let name = entry["name"]?.stringValue, let schema = entry["result"]?["schema"] { schemas[name] = schema }
        }
        documents.withLock { $0[prefix] = schemas }
        return schemas[method]
    }

    /// Where `value` departs from `schema`, one line each, naming the path.
    static func problems(_ value: JSONValue, against schema: JSONValue, at path: String) -> [String] {
        if let cases = schema["enum"]?.arrayValue {
            return cases.contains(value) ? [] : ["\(path): \(value) is none of \(cases)"]
        }
        guard let type = schema["type"]?.stringValue else { return [] }  // {} and $ref: anything
        switch (type, value) {
        case ("string", .string(let text)):
            if let pattern = schema["pattern"]?.stringValue, text.range(of: pattern, options: .regularExpression) == nil {
                return ["\(path): '\(text)' does not match \(pattern)"]
            }
            if schema["format"] == "date-time", (try? Date(text, strategy: .iso8601)) == nil,
                (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) == nil
            {
                return ["\(path): '\(text)' is no RFC 3339 date-time"]
            }
            return []
        case ("boolean", .bool), ("integer", .int), ("number", .int), ("number", .double):
            return []
        case ("array", .array(let items)):
            guard let itemSchema = schema["items"] else { return [] }
            return items.enumerated().flatMap { problems($1, against: itemSchema, at: "\(path)[\($0)]") }
        case ("object", .object(let members)):
            guard let properties = schema["properties"]?.objectValue else { return [] }
            let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            var found: [String] = []
            for name in required.sorted() where members[name] == nil || members[name] == .null {
                found.append("\(path).\(name): required, but \(members[name] == nil ? "missing" : "null")")
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                // Stricter than JSON Schema, which allows members it does not name: a member the
                // document does not describe is a gap in the contract. An object described with no
                // properties at all is a map (a dictionary's keys are not known in advance).
                guard let memberSchema = properties[name] else {
                    if !properties.isEmpty { found.append("\(path).\(name): not in the schema") }
                    continue
                }
                if member == .null, !required.contains(name) { continue }
                found += problems(member, against: memberSchema, at: "\(path).\(name)")
            }
            return found
        default:
            return ["\(path): \(value) is not of type \(type)"]
        }
    }
}

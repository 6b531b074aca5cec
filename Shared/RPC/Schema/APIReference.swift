import AviaryJSON
import Foundation

/// The public API reference in Markdown (`docs/api.md`), rendered from the OpenRPC document the
/// gateway serves at `GET /rpc/discover`: every public method of the seven services, with who may
/// call it, what it does, its params and its result. Written by `aviary docs`; a test fails when
/// the committed file differs from what the running code describes.
public enum APIReference {
    public static func markdown(of document: JSONValue) -> String {
        var text = """
            # Aviary API reference

            Generated from the running services' own descriptions (`GET /rpc/discover` on the gateway, \
            merging every service's `rpc.discover`) by `aviary docs`; do not edit it by hand. README tells \
            how to call: JSON-RPC 2.0 over `POST /rpc` or the WebSocket at `GET /rpc`, with the access \
            token in `Authorization: Bearer …` (or `_meta.token`).

            Types: `id` is a string of 1 to 19 digits; `date-time` an RFC 3339 string; `{a, b?}` an \
            object whose `b` may be absent; `[T]` an array of `T`; `"x" | "y"` one of those strings; \
            `any` any JSON value. Access: `anonymous` needs no token (one given is verified), `user` a \
            user's access token.

            """
        let methods = document["methods"]?.arrayValue ?? []
        var sections: [(prefix: String, methods: [JSONValue])] = []
        for method in methods {
            let name = method["name"]?.stringValue ?? ""
            guard let dot = name.firstIndex(of: "."), name != "rpc.discover" else { continue }
            let prefix = String(name[..<dot])
            if let index = sections.firstIndex(where: { $0.prefix == prefix }) {
                sections[index].methods.append(method)
            } else {
                sections.append((prefix, [method]))
            }
        }
        text += "\n" + sections.map { section in
            "- [\(section.prefix)](#\(section.prefix)): " + section.methods.map { "`\($0["name"]?.stringValue ?? "")`" }.joined(separator: ", ")
        }.joined(separator: "\n") + "\n"
        for section in sections {
            text += "\n## \(section.prefix)\n"
            for method in section.methods { text += "\n" + Self.method(method) }
        }
        return text
    }

    private static func method(_ method: JSONValue) -> String {
        let name = method["name"]?.stringValue ?? ""
        var text = "### \(name)\n\n"
        text += "Access: `\(method["x-access"]?.stringValue ?? "user")`. \(method["summary"]?.stringValue ?? "")\n\n"
        let params = method["params"]?.arrayValue ?? []
        if params.isEmpty {
            text += "Params: none.\n\n"
        } else {
            text += "| param | type | required |\n| --- | --- | --- |\n"
            for param in params {
                let type = Self.type(of: param["schema"] ?? .object([:]), indent: nil)
                text += "| `\(param["name"]?.stringValue ?? "")` | `\(type.replacingOccurrences(of: "|", with: "\\|"))` | \(param["required"]?.boolValue == true ? "yes" : "no") |\n"
            }
            text += "\n"
        }
        text += "Result:\n\n```\n\(Self.type(of: method["result"]?["schema"] ?? .object([:]), indent: ""))\n```\n"
        return text
    }

    /// A schema as a type; with `indent`, objects of more than two members take a line per member.
    static func type(of schema: JSONValue, indent: String?) -> String {
        if let cases = schema["enum"]?.arrayValue {
            return cases.compactMap(\.stringValue).map { "\"\($0)\"" }.joined(separator: " | ")
        }
        var base: String
        switch schema["type"]?.stringValue {
        case "string":
            if schema["pattern"]?.stringValue == "^[0-9]{1,19}$" {
                base = "id"
            } else if let format = schema["format"]?.stringValue {
                base = format
            } else {
                base = "string"
            }
        case "integer", "number", "boolean":
            base = schema["type"]!.stringValue!
            let (least, most) = (schema["minimum"]?.intValue, schema["maximum"]?.intValue)
            if let least, let most {
                base += " \(least)…\(most)"
            } else if let least {
                base += " ≥ \(least)"
            } else if let most {
                base += " ≤ \(most)"
            }
        case "array":
            base = "[" + Self.type(of: schema["items"] ?? .object([:]), indent: indent) + "]"
        case "object":
            base = Self.object(schema, indent: indent)
        default:
            base = "any"
        }
        if let fallback = schema["default"] { base += " = \(Self.literal(fallback))" }
        return base
    }

    private static func object(_ schema: JSONValue, indent: String?) -> String {
        let properties = schema["properties"]?.objectValue ?? [:]
        guard !properties.isEmpty else { return "{}" }
        let required = schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let names = required.filter { properties[$0] != nil } + properties.keys.filter { !required.contains($0) }.sorted()
        guard let indent, names.count > 2 else {
            return "{" + names.map { name in
                name + (required.contains(name) ? "" : "?") + ": " + Self.type(of: properties[name]!, indent: nil)
            }.joined(separator: ", ") + "}"
        }
        let inner = indent + "  "
        return "{\n" + names.map { name in
            inner + name + (required.contains(name) ? "" : "?") + ": " + Self.type(of: properties[name]!, indent: inner)
        }.joined(separator: ",\n") + "\n" + indent + "}"
    }

    private static func literal(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): String(flag)
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .string(let string): "\"\(string)\""
        case .array, .object: "…"
        }
    }
}

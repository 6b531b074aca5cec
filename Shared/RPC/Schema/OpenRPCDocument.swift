import AviaryJSON

/// The service's OpenRPC 1.x document, generated from its registered handlers (`rpc.discover`).
struct OpenRPCDocument: Encodable {
    struct Info: Encodable {
        var title: String
        var version: String
    }

    struct ContentDescriptor: Encodable {
        var name: String
        var schema: JSONValue
        var required: Bool?
    }

    struct Method: Encodable {
        var name: String
        var summary: String
        var description: String
        var paramStructure = "by-name"
        var params: [ContentDescriptor]
        var result: ContentDescriptor
        /// Who may call it (an OpenRPC specification extension): the public edge serves only the
        /// methods that are not `internal`.
        var access: RPCAccess

        enum CodingKeys: String, CodingKey {
            case name, summary, description, paramStructure, params, result
            case access = "x-access"
        }
    }

    var openrpc = "1.3.2"
    var info: Info
    var methods: [Method]

    init(router: RPCRouter) {
        info = Info(title: "aviary-\(router.service)", version: router.version)
        methods = router.methods.values.sorted { $0.name < $1.name }.map { method in
            Method(
                name: method.name, summary: method.summary,
                description: Self.accessNote(method.access),
                params: Self.params(from: method.paramsSchema),
                result: ContentDescriptor(name: "result", schema: method.resultSchema), access: method.access)
        }
        methods.insert(
            Method(
                name: "rpc.discover", summary: "This document.", description: Self.accessNote(.anonymous), params: [],
                result: ContentDescriptor(name: "OpenRPC Schema", schema: ["$ref": "https://raw.githubusercontent.com/open-rpc/meta-schema/master/schema.json"]),
                access: .anonymous),
            at: 0)
    }

    /// By-name params: one descriptor per property of the params object.
    private static func params(from schema: JSONValue) -> [ContentDescriptor] {
        guard let properties = schema["properties"]?.objectValue else { return [] }
        let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        return properties.keys.sorted().map { name in
            ContentDescriptor(name: name, schema: properties[name]!, required: required.contains(name))
        }
    }

    private static func accessNote(_ access: RPCAccess) -> String {
        switch access {
        case .anonymous: "Open to anyone; a token in _meta.token, if given, is verified."
        case .user: "Needs a user's access token in _meta.token."
        case .internal: "Internal: needs the service credential in _meta.service."
        }
    }
}

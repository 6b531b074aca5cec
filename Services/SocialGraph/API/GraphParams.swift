import AviaryAPI
import RPC

/// Params naming one other user.
struct UserParams: Decodable, Sendable {
    var userId: EntityID
}

/// Params of a page of users.
struct UserPageParams: Decodable, Sendable {
    var userId: EntityID
    var limit: PageLimit?
    var cursor: String?
}

/// Params of `graph.suggestions`.
struct SuggestionParams: Decodable, Sendable {
    var limit: PageLimit?
}

/// Params of a page of ids (internal, for fan-out and timeline rebuilds).
struct IDPageParams: Decodable, Sendable {
    var userId: EntityID
    var limit: IDPageLimit?
    var cursor: String?
}

/// The `limit` of an internal id page: default 1,000, at most 5,000.
struct IDPageLimit: Decodable, Sendable, JSONSchemaDescribing {
    static let `default` = 1000
    static let maximum = 5000
    let value: Int

    init(_ value: Int = IDPageLimit.default) {
        self.value = value
    }

    init(from decoder: any Decoder) throws {
        guard let value = try? decoder.singleValueContainer().decode(Int.self), (1...Self.maximum).contains(value) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation("\(field) must be an integer from 1 to \(Self.maximum)", field: field)
        }
        self.value = value
    }

    static var jsonSchema: JSONValue { ["type": "integer", "minimum": 1, "maximum": 5000, "default": 1000] }
}

/// Params of `graph.statsMany` (internal): with `viewerId`, each user's relation to the viewer
/// comes with the counts, so a profile read asks social-graph once, not twice.
struct StatsBatchParams: Decodable, Sendable {
    var ids: [EntityID]
    var viewerId: EntityID?
}

/// Params of `graph.relationships` (internal).
struct RelationshipBatchParams: Decodable, Sendable {
    var viewerId: EntityID
    var ids: [EntityID]
}

/// The largest batch the internal methods take.
enum UserBatch {
    static let maximum = 1000

    /// The ids as numbers; more than `maximum` is a `validation` error naming `ids`.
    static func values(_ ids: [EntityID]) throws(RPCError) -> [Int64] {
        guard ids.count <= maximum else {
            throw RPCError.validation("ids must hold at most \(maximum) ids, got \(ids.count)", field: "ids")
        }
        return ids.map(\.value)
    }
}

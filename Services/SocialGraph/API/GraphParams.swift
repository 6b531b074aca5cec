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

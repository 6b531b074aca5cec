import AviaryAPI
import RPC

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

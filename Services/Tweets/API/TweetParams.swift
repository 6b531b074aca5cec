import AviaryAPI
import RPC

/// The largest batches the internal methods take.
enum Batch {
    static let tweets = 1000
    static let authors = 5000
    static let recent = 800
    static let users = 1000

    /// The ids as numbers; more than `maximum` is a `validation` error naming `field`.
    static func values(_ ids: [EntityID], maximum: Int, field: String) throws(RPCError) -> [Int64] {
        guard ids.count <= maximum else {
            throw RPCError.validation("\(field) must hold at most \(maximum) ids, got \(ids.count)", field: field)
        }
        return ids.map(\.value)
    }
}

import AviaryAPI
import RPC

/// Params of `timeline.home`.
struct HomeParams: Decodable, Sendable {
    var limit: PageLimit?
    var cursor: String?
}

/// Params of `timeline.user`.
struct UserTimelineParams: Decodable, Sendable {
    var userId: EntityID
    var limit: PageLimit?
    var cursor: String?
}

/// The cursor of a timeline page: the id of the last tweet the page considered (shown or left out
/// because it was deleted), as a `KeysetCursor` whose key and id are both that id.
enum TimelineCursor {
    static func encode(_ id: Int64) -> String {
        KeysetCursor(key: id, id: id).encoded
    }
}

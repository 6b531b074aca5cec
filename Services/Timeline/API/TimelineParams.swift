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

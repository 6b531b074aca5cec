import AviaryJSON
import HTTPTypes
import Hummingbird

/// Lists of features Aviary does not have (custom emojis, filters, domain blocks, follow
/// requests, announcements, trending statuses and links, …), answered with Mastodon's neutral
/// values, as an instance with nothing of them answers: apps read many of them when they start.
extension MastodonAPI {
    func addNeutralRoutes(to router: Router<EdgeContext>) {
        let empty: [(path: RouterPath, access: Access, scope: String)] = [
            ("api/v1/custom_emojis", .everyone, "read"), ("api/v1/announcements", .user, "read"),
            ("api/v1/trends/statuses", .everyone, "read"),
            ("api/v1/trends/links", .everyone, "read"), ("api/v1/instance/rules", .everyone, "read"),
            ("api/v1/filters", .user, "read:filters"), ("api/v2/filters", .user, "read:filters"),
            ("api/v1/domain_blocks", .user, "read:blocks"),
            ("api/v1/follow_requests", .user, "read:follows"), ("api/v1/followed_tags", .user, "read:follows"),
            ("api/v1/featured_tags", .user, "read:accounts"), ("api/v1/scheduled_statuses", .user, "read:statuses"),
            ("api/v1/endorsements", .user, "read:accounts"),
        ]
        for (path, access, scope) in empty {
            endpoint(router, .get, path, access: access, scope: scope) { _, _ in EdgeResponses.json([]) }
        }
        endpoint(router, .get, "api/v1/preferences", access: .user, scope: "read:accounts") { _, _ in
            EdgeResponses.json([
                "posting:default:visibility": "public", "posting:default:sensitive": false, "posting:default:language": .null,
                "reading:expand:media": "default", "reading:expand:spoilers": false,
            ])
        }
    }
}

import AviaryAPI
import AviaryJSON
import Foundation
import Hummingbird

/// `GET /api/v1/instance`, `/api/v2/instance` and NodeInfo: what this server is and its limits
/// (the tweets' length as the tweets service is configured, `AVIARY_TWEETS_MAX_LENGTH`; media's
/// types and sizes).
extension MastodonAPI {
    /// The Mastodon version whose API the adapter follows, as clients read it to pick features.
    static let compatibleVersion = "4.3.0"

    func addInstanceRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/instance", access: .everyone, scope: "read") { call, _ in
            return EdgeResponses.json([
                "uri": .string(Self.host(call.renderer.origin)), "title": "Aviary", "short_description": "An Aviary server", "description": "An Aviary server",
                "email": "", "version": .string(version), "urls": ["streaming_api": .string(streamingURL(call))],
                "stats": ["user_count": 0, "status_count": 0, "domain_count": 0], "thumbnail": .null, "languages": ["en"],
                "registrations": .bool(gateway.settings.mastodonRegistrations), "approval_required": false, "invites_enabled": false,
                "configuration": configuration(), "contact_account": .null, "rules": [],
            ])
        }
        endpoint(router, .get, "api/v2/instance", access: .everyone, scope: "read") { call, _ in
            var configuration = configuration()
            if case .object(var fields) = configuration {
                fields["urls"] = ["streaming": .string(streamingURL(call)), "status": .null]
                fields["translation"] = ["enabled": false]
                fields["vapid"] = ["public_key": .string(await vapidKey(call))]
                configuration = .object(fields)
            }
            return EdgeResponses.json([
                "domain": .string(Self.host(call.renderer.origin)), "title": "Aviary", "version": .string(version), "source_url": "https://github.com/",
                "description": "An Aviary server", "usage": ["users": ["active_month": 0]],
                "thumbnail": ["url": .string("\(call.renderer.origin)/avatars/original/missing.png")], "icon": [], "languages": ["en"],
                "configuration": configuration,
                "registrations": ["enabled": .bool(gateway.settings.mastodonRegistrations), "approval_required": false, "message": .null, "url": .null],
                "api_versions": ["mastodon": 2], "contact": ["email": "", "account": .null], "rules": [],
            ])
        }
        router.get(".well-known/nodeinfo") { request, _ in
            let href = origin(of: request) + "/nodeinfo/2.0"
            return EdgeResponses.json(["links": [["rel": "http://nodeinfo.diaspora.software/ns/schema/2.0", "href": .string(href)]]])
        }
        router.get("nodeinfo/2.0") { _, _ in
            EdgeResponses.json([
                "version": "2.0", "software": ["name": "aviary", "version": "1.0.0"], "protocols": [],
                "services": ["outbound": [], "inbound": []], "usage": ["users": ["total": 0], "localPosts": 0],
                "openRegistrations": .bool(gateway.settings.mastodonRegistrations), "metadata": [:],
            ])
        }
    }

    /// `host[:port]` of an origin.
    static func host(_ origin: String) -> String {
        origin.split(separator: "/").last.map(String.init) ?? origin
    }

    private var version: String { "\(Self.compatibleVersion) (compatible; Aviary)" }

    private func streamingURL(_ call: Call) -> String {
        call.renderer.origin.replacingOccurrences(of: "http", with: "ws", options: .anchored)
    }

    /// The limits clients check before they post.
    private func configuration() -> JSONValue {
        let types = MediaType.allCases.map { JSONValue.string($0.rawValue) }
        return [
            "accounts": ["max_featured_tags": 0, "max_pinned_statuses": 1],
            "statuses": [
                "max_characters": .int(Int64(tweetLimit)), "max_media_attachments": 4,
                "characters_reserved_per_url": .int(Int64(TextRules.linkWeight)),
            ],
            "media_attachments": [
                "supported_mime_types": .array(types), "image_size_limit": .int(Int64(maxImageBytes)),
                "image_matrix_limit": 16_777_216, "video_size_limit": .int(Int64(maxVideoBytes)), "video_frame_rate_limit": 60,
                "video_matrix_limit": 2_304_000,
            ],
            "polls": ["max_options": 0, "max_characters_per_option": 0, "min_expiration": 0, "max_expiration": 0],
        ]
    }
}

import AviaryAPI
import AviaryJSON
import Foundation
import ServiceKit

/// Aviary's contract types shaped as Mastodon's entities (Account, Status, MediaAttachment,
/// Relationship), with ids as strings, times as RFC 3339 with milliseconds, and Mastodon's neutral
/// values for what Aviary has no equivalent of (no boosts, polls, cards, emojis, or private
/// accounts). `origin` (`https://host`) makes the pages' URLs.
struct MastodonRenderer: Sendable {
    let origin: String

    // MARK: Account

    /// A full profile; `source` adds the owner's own editing view (verify_credentials).
    func account(_ user: User, source: Bool = false) -> JSONValue {
        var account = accountFields(
            id: user.id, username: user.username, fullname: user.fullname, avatar: user.profileImageUrl,
            createdAt: user.createdAt)
        account["note"] = .string(StatusHTML.paragraphs(user.bio))
        account["followers_count"] = .int(user.stats.followers)
        account["following_count"] = .int(user.stats.following)
        account["statuses_count"] = .int(user.stats.tweets)
        if source {
            account["source"] = [
                "privacy": "public", "sensitive": false, "language": .null, "note": .string(user.bio), "fields": [],
                "follow_requests_count": 0,
            ]
        }
        return .object(account)
    }

    /// The short form tweets carry: counts and note are not known here, so they read as zero
    /// and empty; its creation time is read from the id (time-ordered).
    func account(_ summary: UserSummary) -> JSONValue {
        .object(
            accountFields(
                id: summary.id, username: summary.username, fullname: summary.fullname, avatar: summary.profileImageUrl,
                createdAt: Self.creation(of: summary.id)))
    }

    private func accountFields(id: EntityID, username: String, fullname: String, avatar: String?, createdAt: Date) -> [String: JSONValue] {
        let avatarURL = JSONValue.string(avatar ?? "\(origin)/avatars/original/missing.png")
        let header = JSONValue.string("\(origin)/headers/original/missing.png")
        return [
            "id": .string(id.description), "username": .string(username), "acct": .string(username),
            "display_name": .string(fullname), "locked": false, "bot": false, "discoverable": true, "indexable": true,
            "group": false, "noindex": false, "created_at": .string(RFC3339.format(Self.midnight(createdAt))),
            "note": "", "url": .string(profileURL(username)), "uri": .string(profileURL(username)),
            "avatar": avatarURL, "avatar_static": avatarURL, "header": header, "header_static": header,
            "followers_count": 0, "following_count": 0, "statuses_count": 0, "last_status_at": .null,
            "hide_collections": false, "emojis": [], "fields": [], "roles": [],
        ]
    }

    func profileURL(_ username: String) -> String { "\(origin)/@\(username)" }

    /// A Tag: `uses`, when counted, in today's `history` entry, as `accounts` too (Aviary counts
    /// uses, not people).
    func tag(_ name: String, uses: Int64? = nil) -> JSONValue {
        let history: JSONValue =
            uses.map { uses in
                let today = String(Int(Self.midnight(Date()).timeIntervalSince1970))
                return [["day": .string(today), "uses": .string(String(uses)), "accounts": .string(String(uses))]]
            } ?? []
        return ["name": .string(name), "url": .string(tagURL(name)), "history": history, "following": false]
    }

    func tagURL(_ tag: String) -> String {
        "\(origin)/tags/\(tag.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? tag)"
    }

    // MARK: Status

    /// A tweet as a public status; `source` adds `text`, as Mastodon answers a delete (so that a
    /// client can offer to redraft it).
    /// `bookmarked` when the caller's bookmarks are what is listed, `pinned` when the author's
    /// pinned tweet is (a Tweet says neither). A repost entry is Mastodon's reblog: a status of the
    /// reposter's, with the repost's id and time, whose `reblog` is the original.
    func status(_ tweet: Tweet, source: Bool = false, bookmarked: Bool = false, pinned: Bool = false) -> JSONValue {
        if let reposter = tweet.repostedBy, let repostID = tweet.repostId {
            var original = tweet
            (original.repostedBy, original.repostId) = (nil, nil)
            let reblog = status(original, bookmarked: bookmarked, pinned: pinned)
            guard case .object(var wrapper) = reblog else { return reblog }
            let url = "\(origin)/@\(reposter.username)/\(repostID)"
            wrapper["id"] = .string(repostID.description)
            wrapper["uri"] = .string(url)
            wrapper["url"] = .string(url)
            wrapper["account"] = account(reposter)
            wrapper["created_at"] = .string(RFC3339.format(SnowflakeGenerator.timestamp(of: repostID.value)))
            wrapper["content"] = ""
            wrapper["reblog"] = reblog
            wrapper["quote"] = .null
            (wrapper["media_attachments"], wrapper["mentions"], wrapper["tags"]) = ([], [], [])
            (wrapper["in_reply_to_id"], wrapper["in_reply_to_account_id"]) = (.null, .null)
            return .object(wrapper)
        }
        let url = "\(origin)/@\(tweet.author.username)/\(tweet.id)"
        var fields: [String: JSONValue] = [
            "id": .string(tweet.id.description), "uri": .string(url), "url": .string(url),
            "created_at": .string(RFC3339.format(tweet.createdAt)), "account": account(tweet.author),
            "content": .string(StatusHTML(renderer: self).content(of: tweet)), "visibility": "public", "sensitive": false,
            "spoiler_text": "", "media_attachments": .array(tweet.media.map(media)), "application": .null,
            "mentions": .array(tweet.mentions.map { user in
                ["id": .string(user.id.description), "username": .string(user.username), "acct": .string(user.username),
                 "url": .string(profileURL(user.username))]
            }),
            "tags": .array(tweet.hashtags.map { ["name": .string($0), "url": .string(tagURL($0))] }),
            "emojis": [], "reblogs_count": .int(tweet.reposts), "favourites_count": .int(tweet.likes), "replies_count": .int(tweet.replies),
            "reblog": .null, "poll": .null, "card": .null, "language": .null, "edited_at": .null,
            "in_reply_to_id": tweet.replyTo.map { .string($0.description) } ?? .null,
            "in_reply_to_account_id": tweet.replyToUser.map { .string($0.id.description) } ?? .null,
            "favourited": .bool(tweet.likedByMe), "reblogged": .bool(tweet.repostedByMe), "muted": false, "bookmarked": .bool(bookmarked), "pinned": .bool(pinned),
            "filtered": [],
            // Mastodon 4.5's quote: the quoted status, always accepted (Aviary asks no consent).
            "quote": tweet.quote.map { quoted in .object(["state": "accepted", "quoted_status": status(quoted)]) } ?? .null,
        ]
        if source { fields["text"] = .string(tweet.text ?? "") }
        return .object(fields)
    }

    // MARK: Notification

    /// A notification: a like reads as a favourite, a repost as a reblog, a reply as a mention.
    func notification(_ item: NotificationItem) throws -> JSONValue {
        let type =
            switch item.type {
            case .like: "favourite"
            case .repost: "reblog"
            case .quote: "quote"
            case .follow: "follow"
            case .reply, .mention, .message: "mention"
            }
        return [
            "id": .string(item.id.description), "type": .string(type), "created_at": .string(RFC3339.format(item.createdAt)),
            "account": account(item.actor), "status": try item.decodedTweet().map { status($0) } ?? .null,
            "group_key": .string("ungrouped-\(item.id)"), "report": .null,
        ]
    }

    // MARK: MediaAttachment

    func media(_ media: Media) -> JSONValue {
        let kind =
            if media.contentType == "image/gif" { "gifv" }
            else if media.contentType.hasPrefix("image/") { "image" }
            else if media.contentType.hasPrefix("video/") { "video" }
            else if media.contentType.hasPrefix("audio/") { "audio" }
            else { "unknown" }
        var original: [String: JSONValue] = [:]
        if let width = media.width, let height = media.height, height > 0 {
            original = ["width": .int(Int64(width)), "height": .int(Int64(height)), "size": .string("\(width)x\(height)"),
                        "aspect": .double(Double(width) / Double(height))]
        }
        if let duration = media.durationMs { original["duration"] = .double(Double(duration) / 1000) }
        var meta: [String: JSONValue] = original.isEmpty ? [:] : ["original": .object(original)]
        if let focus = media.focus { meta["focus"] = ["x": .double(focus.x), "y": .double(focus.y)] }
        return [
            "id": .string(media.id.description), "type": .string(kind), "url": .string(media.url),
            "preview_url": .string(media.url), "remote_url": .null, "text_url": .null,
            "meta": .object(meta), "description": media.description.map(JSONValue.string) ?? .null, "blurhash": .null,
        ]
    }

    // MARK: Relationship

    /// The caller's relation to `id`. Blocks and mutes are known where the call made or lifted one
    /// (social-graph's relationship does not tell them); Aviary has no notes or follow requests.
    func relationship(_ id: EntityID, _ relation: Relationship) -> JSONValue {
        [
            "id": .string(id.description), "following": .bool(relation.isFollowed), "showing_reblogs": .bool(relation.isFollowed),
            "notifying": false, "languages": .null, "followed_by": .bool(relation.followsYou), "blocking": .bool(relation.blocking),
            "blocked_by": .bool(relation.blockedBy), "muting": .bool(relation.muting),
            "muting_notifications": .bool(relation.mutingNotifications), "requested": false,
            "requested_by": false, "domain_blocking": false, "endorsed": false, "note": "",
        ]
    }

    // MARK: Times

    /// Mastodon shows when an account was made to the day.
    static func midnight(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    /// When a time-ordered id was issued (``SnowflakeGenerator``).
    static func creation(of id: EntityID) -> Date {
        Date(timeIntervalSince1970: TimeInterval((id.value >> 22) + SnowflakeGenerator.epochMilliseconds) / 1000)
    }
}

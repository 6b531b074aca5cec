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
    func account(_ user: User, source: Bool = false) -> RawJSON {
        RawJSON { writeAccount(user, source: source, to: &$0) }
    }

    /// The short form tweets carry: counts and note are not known here, so they read as zero
    /// and empty; its creation time is read from the id (time-ordered).
    func account(_ summary: UserSummary) -> RawJSON {
        RawJSON { writeAccount(summary, to: &$0) }
    }

    func writeAccount(_ user: User, source: Bool = false, to writer: inout JSONWriter) {
        writer.object { account in
            writeAccountFields(
                id: user.id, username: user.username, fullname: user.fullname, avatar: user.profileImageUrl,
                createdAt: user.createdAt, note: StatusHTML.paragraphs(user.bio), stats: user.stats, to: &account)
            if source {
                account.member("source", object: { source in
                    source.member("privacy", "public")
                    source.member("sensitive", false)
                    source.null("language")
                    source.member("note", user.bio)
                    source.member("fields", [] as JSONValue)
                    source.member("follow_requests_count", 0 as Int64)
                })
            }
        }
    }

    func writeAccount(_ summary: UserSummary, to writer: inout JSONWriter) {
        writer.object { account in
            writeAccountFields(
                id: summary.id, username: summary.username, fullname: summary.fullname, avatar: summary.profileImageUrl,
                createdAt: SnowflakeGenerator.timestamp(of: summary.id.value), note: "", stats: UserStats(), to: &account)
        }
    }

    /// The members both forms of an account have (all but a profile's `source`).
    private func writeAccountFields(
        id: EntityID, username: String, fullname: String, avatar: String?, createdAt: Date, note: String, stats: UserStats,
        to account: inout JSONWriter
    ) {
        let avatarURL = avatar ?? "\(origin)/avatars/original/missing.png"
        let header = "\(origin)/headers/original/missing.png"
        let url = profileURL(username)
        account.member("id", id.description)
        account.member("username", username)
        account.member("acct", username)
        account.member("display_name", fullname)
        for flag: StaticString in ["locked", "bot", "group", "noindex", "hide_collections"] { account.member(flag, false) }
        account.member("discoverable", true)
        account.member("indexable", true)
        account.member("created_at", RFC3339.format(Self.midnight(createdAt)))
        account.member("url", url)
        account.member("uri", url)
        account.member("avatar", avatarURL)
        account.member("avatar_static", avatarURL)
        account.member("header", header)
        account.member("header_static", header)
        account.null("last_status_at")
        for list: StaticString in ["emojis", "fields", "roles"] { account.member(list, [] as JSONValue) }
        account.member("note", note)
        account.member("followers_count", stats.followers)
        account.member("following_count", stats.following)
        account.member("statuses_count", stats.tweets)
    }

    func profileURL(_ username: String) -> String { "\(origin)/@\(username)" }

    /// A Tag: `uses`, when counted, in today's `history` entry, as `accounts` too (Aviary counts
    /// uses, not people).
    func tag(_ name: String, uses: Int64? = nil) -> RawJSON {
        RawJSON.object { tag in
            tag.member("name", name)
            tag.member("url", tagURL(name))
            tag.member("history", array: uses.map { [$0] } ?? []) { history, uses in
                let today = String(Int(Self.midnight(Date()).timeIntervalSince1970))
                history.object { day in
                    day.member("day", today)
                    day.member("uses", String(uses))
                    day.member("accounts", String(uses))
                }
            }
            tag.member("following", false)
        }
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
    func status(_ tweet: Tweet, source: Bool = false, bookmarked: Bool = false, pinned: Bool = false) -> RawJSON {
        RawJSON { writeStatus(tweet, source: source, bookmarked: bookmarked, pinned: pinned, to: &$0) }
    }

    /// Statuses as one array.
    func statuses(_ tweets: some Sequence<Tweet>) -> RawJSON {
        RawJSON { writer in writer.array(tweets) { writer, tweet in writeStatus(tweet, to: &writer) } }
    }

    func writeStatus(_ tweet: Tweet, source: Bool = false, bookmarked: Bool = false, pinned: Bool = false, to writer: inout JSONWriter) {
        if let reposter = tweet.repostedBy, let repostID = tweet.repostId {
            var original = tweet
            (original.repostedBy, original.repostId) = (nil, nil)
            let url = "\(origin)/@\(reposter.username)/\(repostID)"
            writer.object { status in
                status.member("id", repostID.description)
                status.member("uri", url)
                status.member("url", url)
                status.member("created_at", RFC3339.format(SnowflakeGenerator.timestamp(of: repostID.value)))
                status.key("account")
                writeAccount(reposter, to: &status)
                status.member("content", "")
                writeCommonStatusFields(original, bookmarked: bookmarked, pinned: pinned, to: &status)
                for list: StaticString in ["media_attachments", "mentions", "tags"] { status.member(list, [] as JSONValue) }
                status.null("in_reply_to_id")
                status.null("in_reply_to_account_id")
                status.key("reblog")
                writeStatus(original, bookmarked: bookmarked, pinned: pinned, to: &status)
                status.null("quote")
            }
            return
        }
        let url = "\(origin)/@\(tweet.author.username)/\(tweet.id)"
        writer.object { status in
            status.member("id", tweet.id.description)
            status.member("uri", url)
            status.member("url", url)
            status.member("created_at", RFC3339.format(tweet.createdAt))
            status.key("account")
            writeAccount(tweet.author, to: &status)
            status.member("content", StatusHTML(renderer: self).content(of: tweet))
            writeCommonStatusFields(tweet, bookmarked: bookmarked, pinned: pinned, to: &status)
            status.member("media_attachments", array: tweet.media) { list, media in writeMedia(media, to: &list) }
            status.member("mentions", array: tweet.mentions) { list, user in
                list.object { mention in
                    mention.member("id", user.id.description)
                    mention.member("username", user.username)
                    mention.member("acct", user.username)
                    mention.member("url", profileURL(user.username))
                }
            }
            status.member("tags", array: tweet.hashtags) { list, tag in
                list.object { entry in
                    entry.member("name", tag)
                    entry.member("url", tagURL(tag))
                }
            }
            status.member("in_reply_to_id", tweet.replyTo?.description)
            status.member("in_reply_to_account_id", tweet.replyToUser?.id.description)
            status.null("reblog")
            // Mastodon 4.5's quote: the quoted status, always accepted (Aviary asks no consent).
            if let quoted = tweet.quote {
                status.member("quote", object: { quote in
                    quote.member("state", "accepted")
                    quote.key("quoted_status")
                    writeStatus(quoted, to: &quote)
                })
            } else {
                status.null("quote")
            }
            if source { status.member("text", tweet.text ?? "") }
        }
    }

    /// The members a status and the reblog that wraps it share: the original's counts and the
    /// caller's state, and Mastodon's neutral values.
    private func writeCommonStatusFields(_ tweet: Tweet, bookmarked: Bool, pinned: Bool, to status: inout JSONWriter) {
        status.member("visibility", "public")
        status.member("sensitive", false)
        status.member("spoiler_text", "")
        status.member("emojis", [] as JSONValue)
        status.member("filtered", [] as JSONValue)
        status.member("reblogs_count", tweet.reposts)
        status.member("favourites_count", tweet.likes)
        status.member("replies_count", tweet.replies)
        for absent: StaticString in ["application", "poll", "card", "language", "edited_at"] { status.null(absent) }
        status.member("favourited", tweet.likedByMe)
        status.member("reblogged", tweet.repostedByMe)
        status.member("muted", false)
        status.member("bookmarked", bookmarked)
        status.member("pinned", pinned)
    }

    // MARK: Notification

    /// Mastodon's type of a notification of `kind`: a like reads as a favourite, a repost as a
    /// reblog, a reply as a mention.
    static func type(of kind: NotificationKind) -> String {
        switch kind {
        case .like: "favourite"
        case .repost: "reblog"
        case .quote: "quote"
        case .follow: "follow"
        case .reply, .mention, .message: "mention"
        }
    }

    func notification(_ item: NotificationItem) throws -> RawJSON {
        let tweet = try item.decodedTweet()
        return RawJSON.object { notification in
            notification.member("id", item.id.description)
            notification.member("type", Self.type(of: item.type))
            notification.member("created_at", RFC3339.format(item.createdAt))
            notification.key("account")
            writeAccount(item.actor, to: &notification)
            notification.key("status")
            if let tweet { writeStatus(tweet, to: &notification) } else { notification.null() }
            notification.member("group_key", "ungrouped-\(item.id)")
            notification.null("report")
        }
    }

    // MARK: MediaAttachment

    func media(_ media: Media) -> RawJSON {
        RawJSON { writeMedia(media, to: &$0) }
    }

    func writeMedia(_ media: Media, to writer: inout JSONWriter) {
        let kind =
            if media.contentType == "image/gif" { "gifv" }
            else if media.contentType.hasPrefix("image/") { "image" }
            else if media.contentType.hasPrefix("video/") { "video" }
            else if media.contentType.hasPrefix("audio/") { "audio" }
            else { "unknown" }
        let size = media.width.flatMap { width in media.height.flatMap { height in height > 0 ? (width, height) : nil } }
        writer.object { attachment in
            attachment.member("id", media.id.description)
            attachment.member("type", kind)
            attachment.member("url", media.url)
            attachment.member("preview_url", media.url)
            attachment.null("remote_url")
            attachment.null("text_url")
            attachment.member("meta", object: { meta in
                if size != nil || media.durationMs != nil {
                    meta.member("original", object: { original in
                        if let (width, height) = size {
                            original.member("width", width)
                            original.member("height", height)
                            original.member("size", "\(width)x\(height)")
                            original.member("aspect", Double(width) / Double(height))
                        }
                        if let duration = media.durationMs { original.member("duration", Double(duration) / 1000) }
                    })
                }
                if let focus = media.focus {
                    meta.member("focus", object: { point in
                        point.member("x", focus.x)
                        point.member("y", focus.y)
                    })
                }
            })
            attachment.member("description", media.description)
            attachment.null("blurhash")
        }
    }

    // MARK: Relationship

    /// The caller's relation to `id`. Blocks and mutes are known where the call made or lifted one
    /// (social-graph's relationship does not tell them); Aviary has no notes or follow requests.
    func relationship(_ id: EntityID, _ relation: Relationship) -> RawJSON {
        RawJSON.object { entity in
            entity.member("id", id.description)
            entity.member("following", relation.isFollowed)
            entity.member("showing_reblogs", relation.isFollowed)
            entity.member("followed_by", relation.followsYou)
            entity.member("blocking", relation.blocking)
            entity.member("blocked_by", relation.blockedBy)
            entity.member("muting", relation.muting)
            entity.member("muting_notifications", relation.mutingNotifications)
            entity.null("languages")
            for flag: StaticString in ["notifying", "requested", "requested_by", "domain_blocking", "endorsed"] { entity.member(flag, false) }
            entity.member("note", "")
        }
    }

    // MARK: Times

    /// Mastodon shows when an account was made to the day.
    static func midnight(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }
}

import AviaryAPI
import EventStreams
import Foundation
import RPC

/// What each consumed event means for notifications, read as the contract's event types
/// (``GraphTopic``, ``TweetsTopic``, ``MessagingTopic``). Nobody is ever notified of their own
/// action.
enum EventIntake {
    /// The changes `event` makes; none for an event kind notifications does not use. Throws for a
    /// payload that does not have its kind's shape (logged and skipped by the caller).
    static func changes(of event: DomainEvent) throws -> [NotificationStore.Change] {
        if let follow = try event.payload(GraphTopic.followed) {
            let (follower, followee) = (follow.followerId.value, follow.followeeId.value)
            return add(to: followee, .follow, actor: follower, key: NotificationKey.follow(actor: follower), at: follow.at)
        }
        if let unfollow = try event.payload(GraphTopic.unfollowed) {
            let (follower, followee) = (unfollow.followerId.value, unfollow.followeeId.value)
            return [.withdraw(recipient: followee, keys: [NotificationKey.follow(actor: follower)])]
        }
        if let tweet = try event.payload(TweetsTopic.created) { return created(tweet) }
        if let tweet = try event.payload(TweetsTopic.deleted) { return deleted(tweet) }
        if let like = try event.payload(TweetsTopic.liked) {
            let (tweet, author, liker) = (like.tweetId.value, like.authorId.value, like.userId.value)
            return add(
                to: author, .like, actor: liker, tweet: tweet, key: NotificationKey.like(tweet: tweet, actor: liker), at: like.at)
        }
        if let unlike = try event.payload(TweetsTopic.unliked) {
            let (tweet, author, liker) = (unlike.tweetId.value, unlike.authorId.value, unlike.userId.value)
            return [.withdraw(recipient: author, keys: [NotificationKey.like(tweet: tweet, actor: liker)])]
        }
        if let message = try event.payload(MessagingTopic.sent) {
            let (sender, conversation) = (message.senderId.value, message.conversationId.value)
            return (message.offlineRecipientIds ?? []).flatMap { recipient in
                add(
                    to: recipient.value, .message, actor: sender, conversation: conversation,
                    key: NotificationKey.message(message.messageId.value), at: message.createdAt)
            }
        }
        return []
    }

    /// A repost notifies the original's author; a quote the quoted author; a reply the author
    /// replied to; a mention each user mentioned, except those (the reply or quote says it already).
    private static func created(_ event: TweetCreated) -> [NotificationStore.Change] {
        let (tweet, author) = (event.tweetId.value, event.authorId.value)
        if let original = event.repostOf?.value, let originalAuthor = event.repostOfAuthorId?.value {
            return add(
                to: originalAuthor, .repost, actor: author, tweet: original,
                key: NotificationKey.repost(tweet: original, actor: author), at: event.createdAt)
        }
        let repliedTo = event.replyToAuthorId?.value
        let quoted = event.quoteOfAuthorId?.value
        var changes: [NotificationStore.Change] = []
        if let quoted, quoted != repliedTo {
            changes += add(
                to: quoted, .quote, actor: author, tweet: tweet, key: NotificationKey.quote(tweet: tweet), at: event.createdAt)
        }
        if let repliedTo {
            changes += add(
                to: repliedTo, .reply, actor: author, tweet: tweet, key: NotificationKey.reply(tweet: tweet), at: event.createdAt)
        }
        for mentioned in Set(event.mentionIds.map(\.value)).sorted() where mentioned != repliedTo && mentioned != quoted {
            changes += add(
                to: mentioned, .mention, actor: author, tweet: tweet, key: NotificationKey.mention(tweet: tweet),
                at: event.createdAt)
        }
        return changes
    }

    /// A deleted tweet takes back its reply, quote and mention notifications, and the likes and
    /// reposts it had; a repost taken back, its own notification.
    private static func deleted(_ event: TweetDeleted) -> [NotificationStore.Change] {
        let (tweet, author) = (event.tweetId.value, event.authorId.value)
        if let original = event.repostOf?.value, let originalAuthor = event.repostOfAuthorId?.value {
            return [.withdraw(recipient: originalAuthor, keys: [NotificationKey.repost(tweet: original, actor: author)])]
        }
        var changes: [NotificationStore.Change] = [
            .withdrawPrefix(recipient: author, prefix: NotificationKey.likes(tweet: tweet)),
            .withdrawPrefix(recipient: author, prefix: NotificationKey.reposts(tweet: tweet)),
        ]
        if let quoted = event.quoteOfAuthorId?.value {
            changes.append(.withdraw(recipient: quoted, keys: [NotificationKey.quote(tweet: tweet)]))
        }
        if let repliedTo = event.replyToAuthorId?.value {
            changes.append(.withdraw(recipient: repliedTo, keys: [NotificationKey.reply(tweet: tweet)]))
        }
        for mentioned in Set(event.mentionIds.map(\.value)).sorted() {
            changes.append(.withdraw(recipient: mentioned, keys: [NotificationKey.mention(tweet: tweet)]))
        }
        return changes
    }

    private static func add(
        to recipient: Int64, _ kind: NotificationKind, actor: Int64, tweet: Int64? = nil, conversation: Int64? = nil,
        key: String, at: Date
    ) -> [NotificationStore.Change] {
        guard recipient != actor else { return [] }
        return [
            .add(NewNotification(
                recipient: recipient, kind: kind, actor: actor, tweet: tweet, conversation: conversation, key: key,
                createdAt: at))
        ]
    }
}

import AviaryAPI
import Logging
import RPC
import ServiceKit

/// The messaging service: direct and group conversations, their messages and read markers in
/// Postgres, and live events (messages, typing, receipts, presence, membership) through the live hub.
struct MessagingService: Sendable {
    let resources: ServiceResources
    let conversations: ConversationStore
    let messages: MessageStore
    let directory: UserDirectory
    let events: MessagingEvents
    let presence: PresenceTracker
    let typingState: TypingState
    let hub: LiveHub

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its methods.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let window = try resources.configuration.integer(
            "AVIARY_MESSAGING_PRESENCE_WINDOW_MS", default: 60_000, in: 1_000...86_400_000)
        let conversations = ConversationStore(postgres: resources.postgres)
        let hub = resources.liveHub
        let events = MessagingEvents(hub: hub, conversations: conversations)
        let presence = PresenceTracker(
            redis: resources.redis, postgres: resources.postgres, hub: hub, events: events, window: .milliseconds(window),
            logger: resources.logger)
        resources.addBackgroundService(presence)
        resources.prepareOutboxEvents { events in try await nameOfflineRecipients(events, presence: presence) }
        MessagingService(
            resources: resources, conversations: conversations, messages: MessageStore(postgres: resources.postgres),
            directory: UserDirectory(resources: resources), events: events, presence: presence,
            typingState: TypingState(redis: resources.redis), hub: hub
        ).registerMethods(with: &router)
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(
            "messaging.openDirect",
            summary: "The direct conversation of the caller and userId, made on first open: the same one every time for the same pair. Oneself is a validation error; an unknown user is not_found.",
            access: .user, handler: openDirect)
        router.register(
            "messaging.createGroup",
            summary: "A new group conversation with title (1 to 100 characters) and memberIds (other users; at most 256 members with the caller). Unknown users are not_found.",
            access: .user, handler: createGroup)
        router.register(
            "messaging.addMembers",
            summary: "Adds memberIds to a group the caller belongs to (at most 256 members in all). New members see the history but nothing of it as unread. A conversation the caller is not in is not_found.",
            access: .user, handler: addMembers)
        router.register(
            "messaging.leave",
            summary: "The caller leaves a group at once: no more messages, history or events of it. Returns the conversation as it is after. Direct conversations cannot be left.",
            access: .user, handler: leave)
        router.register(
            "messaging.rename",
            summary: "Sets a group's title (1 to 100 characters); any member may. Direct conversations have no title.",
            access: .user, handler: rename)
        router.register(
            "messaging.conversations",
            summary: "Page of the caller's conversations, most recently updated first, each with its members, lastMessage, lastUpdated and the caller's unreadCount.",
            access: .user, handler: conversationPage)
        router.register(
            "messaging.send",
            summary: "Sends a message: text (at most 4,000 characters) and/or mediaId (media uploaded for this conversation). The same clientMessageId from the same sender returns the first message instead of a second.",
            access: .user, resultShape: Message.self, handler: send)
        router.register(
            "messaging.history",
            summary: "Page of a conversation's messages, newest first (order: oldest pages forward from the first message). readBy lists the members who have read each one.",
            access: .user, handler: history)
        router.register(
            "messaging.markRead",
            summary: "Moves the caller's read marker forward to the message upTo (never back) and tells the other members; returns what is still unread.",
            access: .user, handler: markRead)
        router.register(
            "messaging.typing",
            summary: "Shows the other members that the caller is typing (typing: true) until cleared (typing: false) or 6 seconds pass. Repeats within 2 seconds are absorbed.",
            access: .user, handler: typing)
        router.register(
            "messaging.presence",
            summary: "Whether each of userIds (at most 100) is online (a messaging.subscribe stream open, or a messaging call in the last minute) and when they were last seen (null: never). Only the caller's own presence and that of users who took part (made, sent in or read) in a conversation the caller is in are told; anyone else reads as offline and never seen.",
            access: .user, handler: presenceOf)
        router.register(
            "messaging.subscribe",
            summary: "Opens a subscription on this connection: notifications messaging.event with {subscription, event}, event.type one of message, typing, read, presence, conversation (and resync: events may have been missed, reload; unsubscribed, reason unauthenticated, last when the session that subscribed ends: logout, password change). A user holds at most \(hub.subscriptionsPerUserAndConnection) subscriptions on one connection (conflict beyond).",
            access: .user, handler: subscribe)
        router.register(
            "messaging.unsubscribe", summary: "Ends a subscription opened on this connection.", access: .user,
            handler: unsubscribe)
        router.register(MessagingAPI.isMember, handler: isMember)
    }

    /// What a caller who is not a member gets, whether or not the conversation exists.
    static func unknownConversation(_ id: EntityID) -> RPCError {
        RPCError.notFound("no conversation has the id \(id)")
    }

    /// Records the call for presence; presence is secondary, so a Redis failure does not fail the call.
    func recordCall(_ user: Int64, _ context: RPCContext) async {
        do {
            try await presence.record(user)
        } catch {
            context.logger.warning("could not record presence", metadata: ["error": "\(error)"])
        }
    }
}

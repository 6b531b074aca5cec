import AviaryAPI
import Logging
import RPC
import ServiceKit

/// The messaging service: direct and group conversations, their messages and read markers in
/// Postgres, and live events (messages, typing, receipts, presence, membership) through the live hub.
public struct MessagingService: Sendable {
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
        resources.keepBlocksInMemory()
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
        let service = MessagingService(
            resources: resources, conversations: conversations, messages: MessageStore(postgres: resources.postgres),
            directory: UserDirectory(resources: resources), events: events, presence: presence,
            typingState: TypingState(redis: resources.redis), hub: hub)
        service.registerMethods(with: &router)
        resources.eraseDeletedAccounts(service.erase(user:))
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(MessagingAPI.openDirect, handler: openDirect)
        router.register(MessagingAPI.mute, handler: mute)
        router.register(MessagingAPI.createGroup, handler: createGroup)
        router.register(MessagingAPI.addMembers, handler: addMembers)
        router.register(MessagingAPI.leave, handler: leave)
        router.register(MessagingAPI.rename, handler: rename)
        router.register(MessagingAPI.removeMember, handler: removeMember)
        router.register(MessagingAPI.setRole, handler: setRole)
        router.register(MessagingAPI.transferOwnership, handler: transferOwnership)
        router.register(MessagingAPI.setPicture, handler: setPicture)
        router.register(MessagingAPI.conversations, handler: conversationPage)
        router.register(MessagingAPI.send, encoded: send)
        router.register(MessagingAPI.edit, handler: edit)
        router.register(MessagingAPI.delete, handler: deleteMessage)
        router.register(MessagingAPI.react, handler: react)
        router.register(MessagingAPI.history, handler: history)
        router.register(MessagingAPI.markRead, handler: markRead)
        router.register(MessagingAPI.typing, handler: typing)
        router.register(MessagingAPI.presence, handler: presenceOf)
        router.register(
            MessagingAPI.subscribe,
            summary: MessagingAPI.subscribeSummary(subscriptionsPerConnection: hub.subscriptionsPerUserAndConnection),
            handler: subscribe)
        router.register(MessagingAPI.unsubscribe, handler: unsubscribe)
        router.register(MessagingAPI.isMember, handler: isMember)
        router.register(MessagingAPI.reportable, handler: reportable)
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

import AviaryAPI
import Foundation
import Logging
import RPC
import ServiceKit

extension MessagingService {
    @Sendable func typing(_ params: TypingParams, _ context: RPCContext) async throws -> Empty {
        let caller = try context.requireUser()
        let conversation = params.conversationId.value
        guard let everyone = try await conversations.members(of: conversation, ifIncluding: caller) else {
            throw Self.unknownConversation(params.conversationId)
        }
        await recordCall(caller, context)
        let members = await audience(of: caller, among: everyone, context: context)
        if params.typing {
            guard let token = try await typingState.start(conversation, user: caller) else { return Empty() }
            try await events.typing(
                conversation, user: caller, typing: true, expiresAt: Date().addingTimeInterval(6), to: members)
            let logger = context.logger
            // The instance that announced "typing" announces its lapse, unless something newer came,
            // to the members as they are then: one who left meanwhile hears nothing more of it (and
            // when the typist left, the others see the lapse at expiresAt).
            Task(executorPreference: EventLoopTaskExecutor.current) { [self] in
                try? await Task.sleep(for: TypingState.lifetime + .milliseconds(50))
                do {
                    if try await typingState.expire(conversation, user: caller, token: token),
                        let members = try await conversations.members(of: conversation, ifIncluding: caller)
                    {
                        try await events.typing(
                            conversation, user: caller, typing: false, expiresAt: nil,
                            to: await audience(of: caller, among: members, context: nil))
                    }
                } catch {
                    logger.warning("could not announce a typing lapse", metadata: ["error": "\(error)"])
                }
            }
        } else if try await typingState.stop(conversation, user: caller) {
            try await events.typing(conversation, user: caller, typing: false, expiresAt: nil, to: members)
        }
        return Empty()
    }

    /// The most users `messaging.presence` answers about at once.
    static let presenceLimit = 100

    @Sendable func presenceOf(_ params: PresenceParams, _ context: RPCContext) async throws -> [Presence] {
        let caller = try context.requireUser()
        guard params.userIds.count <= Self.presenceLimit else {
            throw RPCError.validation(
                "userIds must list at most \(Self.presenceLimit) ids, got \(params.userIds.count)", field: "userIds")
        }
        await recordCall(caller, context)
        // Presence is private to the people one talks with: anyone else reads as never seen, so a
        // stranger cannot watch when a user is online.
        let asked = params.userIds.map(\.value)
        let visible = Set(try await conversations.presenceVisible(to: caller, among: asked)).union([caller])
        let known = try await presence.presence(of: asked.filter(visible.contains))
        let byUser = Dictionary(known.map { ($0.userId.value, $0) }, uniquingKeysWith: { first, _ in first })
        return asked.map { user in byUser[user] ?? Presence(userId: EntityID(user), online: false, lastSeen: nil) }
    }

    @Sendable func subscribe(_ params: Empty, _ context: RPCContext) async throws -> SubscriptionResult {
        let principal = try context.requirePrincipal()
        let caller = principal.userID
        guard let connection = context.connection else {
            throw RPCError.validation("messaging.subscribe needs a connection to push events on", field: "subscription")
        }
        guard let id = try await hub.subscribe(principal, connection: connection) else {
            throw RPCError.unavailable("the connection closed")
        }
        do {
            try await presence.subscriptionOpened(caller)
        } catch {
            context.logger.warning("could not record a subscription for presence", metadata: ["error": "\(error)"])
        }
        return SubscriptionResult(subscription: id)
    }

    @Sendable func unsubscribe(_ params: UnsubscribeParams, _ context: RPCContext) async throws -> Empty {
        try hub.unsubscribe(params.subscription, context: context)
        await recordCall(try context.requireUser(), context)
        return Empty()
    }
}

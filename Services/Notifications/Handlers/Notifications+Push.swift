import AviaryAPI
import RPC
import ServiceKit

extension NotificationsService {
    @Sendable func setPush(_ params: PushSubscriptionParams, _ context: RPCContext) async throws -> PushSubscription {
        let principal = try Self.principal(context)
        let endpoint = try PushEndpoint(params.endpoint, allowPrivate: push.sender.allowPrivate)
        _ = try WebPushCrypto.Subscriber(p256dh: params.p256dh, auth: params.auth)
        if let token = params.clientToken, !(1...512).contains(token.count) {
            throw RPCError.validation("clientToken must be 1 to 512 characters, got \(token.count)", field: "clientToken")
        }
        let kinds = params.kinds.map { Array(Set($0)) } ?? NotificationKind.allCases
        let stored = try await pushStore.set(
            PushStore.Subscription(
                id: resources.ids.next(), user: principal.userID, endpoint: endpoint.url, p256dh: params.p256dh, auth: params.auth,
                kinds: kinds, policy: params.policy ?? .all, standard: params.standard ?? true, clientToken: params.clientToken),
            session: principal.sessionID)
        return try await rendered(stored)
    }

    @Sendable func pushSubscription(_ params: Empty, _ context: RPCContext) async throws -> PushSubscription {
        guard let stored = try await pushStore.subscription(of: try Self.principal(context).sessionID) else { throw Self.noPush }
        return try await rendered(stored)
    }

    @Sendable func updatePush(_ params: PushUpdateParams, _ context: RPCContext) async throws -> PushSubscription {
        let session = try Self.principal(context).sessionID
        guard let stored = try await pushStore.update(session: session, kinds: params.kinds.map { Array(Set($0)) }, policy: params.policy) else {
            throw Self.noPush
        }
        return try await rendered(stored)
    }

    @Sendable func deletePush(_ params: Empty, _ context: RPCContext) async throws -> Empty {
        try await pushStore.delete(session: try Self.principal(context).sessionID)
        return Empty()
    }

    @Sendable func pushKey(_ params: Empty, _ context: RPCContext) async throws -> PushKey {
        PushKey(serverKey: try await push.vapidKey().publicKey)
    }

    private func rendered(_ stored: PushStore.Subscription) async throws -> PushSubscription {
        PushSubscription(
            id: EntityID(stored.id), endpoint: stored.endpoint, kinds: stored.kinds.sorted { $0.rawValue < $1.rawValue },
            policy: stored.policy, standard: stored.standard, serverKey: try await push.vapidKey().publicKey)
    }

    private static func principal(_ context: RPCContext) throws(RPCError) -> RPCPrincipal {
        _ = try context.requireUser()
        guard let principal = context.principal else { throw RPCError.unauthenticated() }
        return principal
    }

    private static let noPush = RPCError.notFound("this session has no push subscription")
}

import Foundation
import RPC

/// Whose actions a Web Push subscription is sent for.
public enum PushPolicy: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case all
    case followed
    case follower
    case none
}

/// Params of `notifications.setPush`.
public struct PushSubscriptionParams: Codable, Sendable {
    public var endpoint: String
    public var p256dh: String
    public var auth: String
    public var kinds: [NotificationKind]?
    public var policy: PushPolicy?
    public var standard: Bool?
    public var clientToken: String?

    public init(
        endpoint: String, p256dh: String, auth: String, kinds: [NotificationKind]? = nil, policy: PushPolicy? = nil,
        standard: Bool? = nil, clientToken: String? = nil
    ) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.kinds = kinds
        self.policy = policy
        self.standard = standard
        self.clientToken = clientToken
    }
}

/// Params of `notifications.updatePush`: what is given changes.
public struct PushUpdateParams: Codable, Sendable {
    public var kinds: [NotificationKind]?
    public var policy: PushPolicy?

    public init(kinds: [NotificationKind]? = nil, policy: PushPolicy? = nil) {
        self.kinds = kinds
        self.policy = policy
    }
}

/// A session's Web Push subscription, and the server's VAPID public key (base64url, uncompressed
/// P-256 point) its pushes are signed with.
public struct PushSubscription: Codable, Sendable, Hashable {
    public var id: EntityID
    public var endpoint: String
    public var kinds: [NotificationKind]
    public var policy: PushPolicy
    public var standard: Bool
    public var serverKey: String

    public init(id: EntityID, endpoint: String, kinds: [NotificationKind], policy: PushPolicy, standard: Bool, serverKey: String) {
        self.id = id
        self.endpoint = endpoint
        self.kinds = kinds
        self.policy = policy
        self.standard = standard
        self.serverKey = serverKey
    }
}

/// The result of `notifications.pushKey`.
public struct PushKey: Codable, Sendable, Hashable {
    public var serverKey: String

    public init(serverKey: String) {
        self.serverKey = serverKey
    }
}

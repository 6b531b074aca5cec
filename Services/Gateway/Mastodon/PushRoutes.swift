import AviaryAPI
import AviaryJSON
import Hummingbird
import RPC

/// `/api/v1/push/subscription`: the token's Web Push subscription (notifications'
/// `notifications.setPush` … `deletePush`, one per session, so one per token). Mastodon's alerts
/// map to Aviary's kinds: `mention` to mentions and replies, `favourite` to likes, `reblog` to
/// reposts, `follow` and `quote` to themselves; the rest (`status`, `update`, `poll`,
/// `follow_request`, `admin.*`) have nothing behind them and read false. As Mastodon, an alert not
/// given is off, and `subscription[standard]` (RFC 8291's aes128gcm) defaults to false (the legacy
/// aesgcm). Each push carries the token as `access_token`.
extension MastodonAPI {
    func addPushRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .post, "api/v1/push/subscription", access: .user, scope: "push") { call, _ in
            guard let endpoint = call.params["subscription[endpoint]"] else { throw MastodonError.validation("subscription[endpoint]", "can't be blank") }
            guard let p256dh = call.params["subscription[keys][p256dh]"], let auth = call.params["subscription[keys][auth]"] else {
                throw MastodonError.validation("subscription[keys]", "can't be blank")
            }
            let params = PushSubscriptionParams(
                endpoint: endpoint, p256dh: p256dh, auth: auth, kinds: Self.pushKinds(call.params) ?? [], policy: try Self.pushPolicy(call.params),
                standard: call.params.flag("subscription[standard]") ?? false, clientToken: call.token)
            return EdgeResponses.json(Self.rendered(try await self.call(NotificationsAPI.setPush, params, call)))
        }
        endpoint(router, .get, "api/v1/push/subscription", access: .user, scope: "push") { call, _ in
            EdgeResponses.json(Self.rendered(try await self.call(NotificationsAPI.push, Empty(), call)))
        }
        endpoint(router, .put, "api/v1/push/subscription", access: .user, scope: "push") { call, _ in
            let params = PushUpdateParams(kinds: Self.pushKinds(call.params), policy: try Self.pushPolicy(call.params))
            return EdgeResponses.json(Self.rendered(try await self.call(NotificationsAPI.updatePush, params, call)))
        }
        endpoint(router, .delete, "api/v1/push/subscription", access: .user, scope: "push") { call, _ in
            _ = try await self.call(NotificationsAPI.deletePush, Empty(), call)
            return EdgeResponses.json([:])
        }
    }

    /// The server's VAPID key, which browsers subscribe with (in a new app and the instance);
    /// empty while notifications cannot say.
    func vapidKey(_ call: Call) async -> String {
        (try? await self.call(NotificationsAPI.pushKey, Empty(), call))?.serverKey ?? ""
    }

    /// Mastodon's alerts and the kinds each stands for.
    private static let alerts: [(alert: String, kinds: [NotificationKind])] = [
        ("mention", [.mention, .reply]), ("favourite", [.like]), ("reblog", [.repost]), ("follow", [.follow]), ("quote", [.quote]),
        ("status", []), ("update", []), ("poll", []), ("follow_request", []), ("admin.sign_up", []), ("admin.report", []),
    ]

    /// The kinds the `data[alerts][…]` given turn on; nil when none is given.
    private static func pushKinds(_ params: MastodonParams) -> [NotificationKind]? {
        let given = alerts.filter { params["data[alerts][\($0.alert)]"] != nil }
        guard !given.isEmpty else { return nil }
        return given.filter { params.flag("data[alerts][\($0.alert)]") == true }.flatMap(\.kinds)
    }

    /// `data[policy]` (or `policy`, as some clients send it).
    private static func pushPolicy(_ params: MastodonParams) throws(MastodonError) -> PushPolicy? {
        guard let text = params["data[policy]"] ?? params["policy"] else { return nil }
        guard let policy = PushPolicy(rawValue: text) else { throw .validation("data[policy]", "must be all, followed, follower or none") }
        return policy
    }

    /// A subscription as Mastodon's WebPushSubscription.
    private static func rendered(_ subscription: PushSubscription) -> JSONValue {
        let kinds = Set(subscription.kinds)
        var shown: [String: JSONValue] = [:]
        for (alert, alertKinds) in alerts { shown[alert] = .bool(!alertKinds.isEmpty && alertKinds.allSatisfy(kinds.contains)) }
        return [
            "id": .string(subscription.id.description), "endpoint": .string(subscription.endpoint), "standard": .bool(subscription.standard),
            "alerts": .object(shown), "policy": .string(subscription.policy.rawValue), "server_key": .string(subscription.serverKey),
        ]
    }
}

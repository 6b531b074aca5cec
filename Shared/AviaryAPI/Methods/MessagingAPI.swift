import RPC

/// messaging's methods that other services call.
public enum MessagingAPI {
    public static let isMember = RPCMethod<IsMemberParams, MembershipResult>(
        "messaging.isMember", access: .internal,
        summary: "Internal. Whether userId is a current member of conversationId: {member: bool}.")
}

/// Params of `messaging.isMember`.
public struct IsMemberParams: Codable, Sendable {
    public var conversationId: EntityID
    public var userId: EntityID

    public init(conversationId: EntityID, userId: EntityID) {
        self.conversationId = conversationId
        self.userId = userId
    }
}

/// The result of `messaging.isMember`.
public struct MembershipResult: Codable, Sendable {
    public var member: Bool

    public init(member: Bool) {
        self.member = member
    }
}

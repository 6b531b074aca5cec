import RPC

/// auth's methods that other services call.
public enum AuthAPI {
    public static let getUsers = RPCMethod<GetUsersParams, [UserSummary]>(
        "auth.getUsers", access: .internal,
        summary: """
            Internal: users by id (ids) and/or by username (usernames, case-insensitive), at most 1,000 in all, in \
            the order asked (those by id first), unknown ones left out: {id, username, fullname, profileImageUrl}.
            """)

    public static let getProfiles = RPCMethod<GetProfilesParams, [User]>(
        "auth.getProfiles", access: .internal,
        summary: """
            Internal: the whole profiles of ids (at most 1,000), in the order asked, relative to viewerId when \
            given; unknown ids are left out.
            """)
}

/// Params of `auth.getUsers`.
public struct GetUsersParams: Codable, Sendable {
    public var ids: [EntityID]?
    /// Users by username instead (or as well), as `@mentions` name them.
    public var usernames: [String]?

    public init(ids: [EntityID]? = nil, usernames: [String]? = nil) {
        self.ids = ids
        self.usernames = usernames
    }
}

/// Params of `auth.getProfiles`.
public struct GetProfilesParams: Codable, Sendable {
    public var ids: [EntityID]
    /// Whose relations the profiles show; none when omitted.
    public var viewerId: EntityID?

    public init(ids: [EntityID], viewerId: EntityID?) {
        self.ids = ids
        self.viewerId = viewerId
    }
}

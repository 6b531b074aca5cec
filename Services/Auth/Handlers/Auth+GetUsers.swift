import AviaryAPI
import RPC

/// How much of each user `auth.getUsers` returns.
enum UserDetail: String, Codable, Sendable, JSONSchemaEnum {
    /// `{id, username, fullname, profileImageUrl}`.
    case summary
    /// Whole profiles, with counts and the viewer's relations.
    case full
}

/// `auth.getUsers` params.
struct GetUsersParams: Codable, Sendable {
    var ids: [EntityID]?
    /// Users by username instead (or as well), as `@mentions` name them; matched case-insensitively.
    var usernames: [String]?
    /// Whose relations `full` profiles show; none when omitted.
    var viewerId: EntityID?
    var detail: UserDetail?
}

/// `auth.getUsers` result: summaries or whole profiles, as `detail` asked.
enum GetUsersResult: Encodable, Sendable, JSONSchemaDescribing {
    case summaries([UserSummary])
    case users([User])

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .summaries(let summaries): try summaries.encode(to: encoder)
        case .users(let users): try users.encode(to: encoder)
        }
    }

    static var jsonSchema: JSONValue {
        [
            "oneOf": [
                ["type": "array", "items": JSONSchema.of(UserSummary.self)],
                ["type": "array", "items": JSONSchema.of(User.self)],
            ]
        ]
    }
}

extension AuthService {
    static let getUsersLimit = UserSummary.lookupLimit

    func getUsers(_ params: GetUsersParams, context: RPCContext) async throws -> GetUsersResult {
        let ids = params.ids ?? []
        let usernames = (params.usernames ?? []).map { $0.lowercased() }
        guard ids.count + usernames.count <= Self.getUsersLimit else {
            throw RPCError.validation(
                "ids and usernames must list at most \(Self.getUsersLimit) users together, got \(ids.count + usernames.count)",
                field: params.ids == nil ? "usernames" : "ids")
        }
        async let byID = users.find(ids: Array(Set(ids.map(\.value))))
        // A name no account can have (too long, a NUL, a space) is simply not found.
        async let byName = users.find(usernames: Array(Set(usernames.filter { (try? TextRules.username($0)) != nil })))
        let idIndex = Dictionary(try await byID.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let nameIndex = Dictionary(try await byName.map { ($0.username, $0) }, uniquingKeysWith: { first, _ in first })
        let ordered = ids.compactMap { idIndex[$0.value] } + usernames.compactMap { nameIndex[$0] }
        switch params.detail ?? .summary {
        case .summary:
            return .summaries(ordered.map(profiles.summary))
        case .full:
            return .users(await profiles.users(ordered, viewer: params.viewerId?.value, context: context))
        }
    }
}

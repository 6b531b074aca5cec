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
    var ids: [EntityID]
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
    static let getUsersLimit = 1000

    func getUsers(_ params: GetUsersParams, context: RPCContext) async throws -> GetUsersResult {
        guard params.ids.count <= Self.getUsersLimit else {
            throw RPCError.validation("ids must list at most \(Self.getUsersLimit) ids, got \(params.ids.count)", field: "ids")
        }
        let found = try await users.find(ids: Array(Set(params.ids.map(\.value))))
        let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let ordered = params.ids.compactMap { byID[$0.value] }
        switch params.detail ?? .summary {
        case .summary:
            return .summaries(ordered.map(profiles.summary))
        case .full:
            return .users(await profiles.users(ordered, viewer: params.viewerId?.value, context: context))
        }
    }
}

import AviaryAPI
import RPC

extension AuthService {
    static let getUsersLimit = UserSummary.lookupLimit

    func getUsers(_ params: GetUsersParams, context: RPCContext) async throws -> [UserSummary] {
        let ids = params.ids ?? []
        let usernames = (params.usernames ?? []).map { $0.lowercased() }
        guard ids.count + usernames.count <= Self.getUsersLimit else {
            throw RPCError.validation(
                "ids and usernames must list at most \(Self.getUsersLimit) users together, got \(ids.count + usernames.count)",
                field: params.ids == nil ? "usernames" : "ids")
        }
        async let byID = accounts(ids)
        // A name no account can have (too long, a NUL, a space) is simply not found.
        async let byName = users.find(usernames: Array(Set(usernames.filter { (try? TextRules.username($0)) != nil })))
        let nameIndex = Dictionary(try await byName.map { ($0.username, $0) }, uniquingKeysWith: { first, _ in first })
        return (try await byID + usernames.compactMap { nameIndex[$0] }).map(profiles.summary)
    }

    func getProfiles(_ params: GetProfilesParams, context: RPCContext) async throws -> [User] {
        guard params.ids.count <= Self.getUsersLimit else {
            throw RPCError.validation(
                "ids must list at most \(Self.getUsersLimit) users, got \(params.ids.count)", field: "ids")
        }
        return await profiles.users(try await accounts(params.ids), viewer: params.viewerId?.value, context: context)
    }

    /// The accounts of `ids` in that order (repeats kept), unknown ones left out: one query.
    private func accounts(_ ids: [EntityID]) async throws -> [UserRecord] {
        let found = Dictionary(
            try await users.find(ids: Array(Set(ids.map(\.value)))).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return ids.compactMap { found[$0.value] }
    }
}

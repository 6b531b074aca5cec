import AviaryAPI
import RPC

/// `auth.updateProfile` params: only the fields to change; `profileImageId: null` removes the
/// profile image (left out, it stays).
struct UpdateProfileParams: Decodable, Sendable {
    var fullname: String?
    var bio: String?
    var username: String?
    /// From `profileImageId`: an id sets the image, null removes it, left out it stays.
    var profileImage = UserStore.ProfileImageChange.keep

    private enum CodingKeys: String, CodingKey {
        case fullname, bio, username, profileImageId
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fullname = try container.decodeIfPresent(String.self, forKey: .fullname)
        bio = try container.decodeIfPresent(String.self, forKey: .bio)
        username = try container.decodeIfPresent(String.self, forKey: .username)
        if container.contains(.profileImageId) {
            profileImage = try container.decodeIfPresent(EntityID.self, forKey: .profileImageId).map { .set($0.value) } ?? .remove
        }
    }
}

extension AuthService {
    func updateProfile(_ params: UpdateProfileParams, context: RPCContext) async throws -> User {
        let userID = try context.requireUser()
        let fullname = try params.fullname.map { name throws(RPCError) in try AccountRules.fullname(name) }
        let bio = try params.bio.map { text throws(RPCError) in try AccountRules.bio(text) }
        let username = try params.username.map { name throws(RPCError) in try AccountRules.username(name) }
        if case .set(let image) = params.profileImage {
            try await profileImages.check(EntityID(image), ownedBy: userID, context: context)
        }
        guard
            let record = try await users.updateProfile(
                userID: userID, fullname: fullname, bio: bio, username: username, profileImage: params.profileImage)
        else { throw RPCError.notFound("this account no longer exists") }
        return await profiles.user(record, viewer: userID, context: context)
    }
}

import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    func updateProfile(_ params: UpdateProfileParams, context: RPCContext) async throws -> User {
        let userID = try context.requireUser()
        let fullname = try params.fullname.map { name throws(RPCError) in try AccountRules.fullname(name) }
        let bio = try params.bio.map { text throws(RPCError) in try AccountRules.bio(text) }
        let username = try params.username.map { name throws(RPCError) in try AccountRules.username(name) }
        if case .set(let image) = params.profileImage {
            try await profileImages.check(image, ownedBy: userID, context: context)
        }
        guard
            let record = try await users.updateProfile(
                userID: userID, fullname: fullname, bio: bio, username: username, profileImage: params.profileImage)
        else { throw RPCError.notFound("this account no longer exists") }
        await resources.replicaReads.recordWrite(to: [Self.profile(userID)])
        return await profiles.user(record, viewer: userID, context: context)
    }
}

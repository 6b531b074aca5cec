import AviaryAPI
import AviaryJSON
import Foundation
import TestSupport
import Testing

/// Profiles: reading, updating, and text that would break careless SQL or Unicode handling.
@Suite struct ProfileTests {
    static let hostile: [(String, String)] = [
        ("Robert'); DROP TABLE auth.users;--", "'; DROP TABLE auth.sessions; -- \\ \" ` $1 %s %_"),
        ("👩‍👩‍👧‍👦 Family 🇺🇦", "emoji 😀🎉🧑🏽‍🚀 and CJK 漢字かな"),
        ("\u{200F}שלום עולם\u{200E}", "RTL \u{202E}txet desrever\u{202C} mixed עברית and English\u{200F}"),
        ("Zalgo Z̸̡̢a̶l̷g̴o̵", "combining marks e\u{0301} and\ttabs\nand newlines"),
    ]

    @Test(arguments: hostile)
    func hostileTextRoundTrips(fullname: String, bio: String) async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register(["fullname": .string(fullname), "bio": .string(bio)])
        #expect(account.signIn.user.fullname == fullname)
        #expect(account.signIn.user.bio == bio)
        let me = try await auth.me(account.token)
        #expect(me.fullname.unicodeScalars.elementsEqual(fullname.unicodeScalars))
        #expect(me.bio.unicodeScalars.elementsEqual(bio.unicodeScalars))
        let seen = try await auth.call("auth.getUser", ["username": .string(account.username)], as: User.self)
        #expect(seen.fullname == fullname && seen.bio == bio)

        let other = try await auth.register()
        let updated = try await auth.call(
            "auth.updateProfile", ["fullname": .string(fullname), "bio": .string(bio)], token: other.token, as: User.self)
        #expect(updated.fullname.unicodeScalars.elementsEqual(fullname.unicodeScalars))
        #expect(updated.bio.unicodeScalars.elementsEqual(bio.unicodeScalars))
    }

    @Test func getUserByIdOrUsernameIsRelativeToTheCaller() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register(["bio": "visible to all"])
        let viewer = try await auth.register()

        let anonymous = try await auth.call("auth.getUser", ["userId": .string(account.id)], as: User.self)
        #expect(anonymous.username == account.username && anonymous.bio == "visible to all")
        #expect(anonymous.email == nil && !anonymous.isCurrentUser && !anonymous.isFollowed && !anonymous.followsYou)

        let byName = try await auth.call(
            "auth.getUser", ["username": .string("@" + account.username.uppercased())], token: viewer.token, as: User.self)
        #expect(byName.id == anonymous.id && byName.email == nil && !byName.isCurrentUser)

        let own = try await auth.call("auth.getUser", ["userId": .string(account.id)], token: account.token, as: User.self)
        #expect(own.isCurrentUser && own.email == account.email)

        await expectRPCError(Code.notFound) { _ = try await auth.call("auth.getUser", ["userId": "1"]) }
        await expectRPCError(Code.notFound) { _ = try await auth.call("auth.getUser", ["username": "nobody_here_x"]) }
    }

    @Test func updateProfileChangesOnlyTheGivenFields() async throws {
        let auth = try await AuthStack.shared.main().api
        // An avatar is checked with the media service (MediaReferenceTests); a new account owns none yet.
        await expectRPCError(Code.validation, field: "profileImageId") {
            _ = try await auth.register(["profileImageId": "12345"])
        }
        let account = try await auth.register(["bio": "old bio"])
        #expect(account.signIn.user.profileImageUrl == nil)
        let newName = Unique.username()
        let updated = try await auth.call(
            "auth.updateProfile", ["username": .string(newName.uppercased()), "fullname": "  New Name  "], token: account.token,
            as: User.self)
        #expect(updated.username == newName && updated.fullname == "New Name" && updated.bio == "old bio")
        _ = try await auth.login(newName, account.password)
        await expectRPCError(Code.unauthenticated) { _ = try await auth.login(account.username, account.password) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.call("auth.updateProfile", ["bio": "x"]) }
    }

    @Test func profilesAreServedWhenSocialGraphIsDown() async throws {
        let instance = try await AuthStack.shared.main()
        let account = try await instance.api.register()
        let other = try await instance.api.register()
        let seen = try await instance.api.call("auth.getUser", ["userId": .string(other.id)], token: account.token, as: User.self)
        #expect(seen.stats == UserStats(followers: 0, following: 0, tweets: 0))
        #expect(!seen.isFollowed && !seen.followsYou)
        #expect(instance.process.logText().contains("social-graph did not answer"))
    }
}

import AviaryAPI
import AviaryJSON
import Testing

/// `auth.getUsers` and `auth.getProfiles` serve other services only.
@Suite struct InternalMethodTests {
    @Test func getUsersRefusesCallsWithoutTheServiceCredential() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let params: JSONValue = ["ids": [.string(account.id)]]
        await expectRPCError(Code.forbidden) { _ = try await auth.call("auth.getUsers", params) }
        await expectRPCError(Code.forbidden) { _ = try await auth.call("auth.getUsers", params, token: account.token) }
        await expectRPCError(Code.forbidden) { _ = try await auth.call("auth.getUsers", params, service: "a wrong credential") }
        await expectRPCError(Code.forbidden) { _ = try await auth.call("auth.getProfiles", params, token: account.token) }
    }

    @Test func getUsersAnswersInTheOrderAskedWithoutUnknownIds() async throws {
        let auth = try await AuthStack.shared.main().api
        let a = try await auth.register()
        let b = try await auth.register()
        let ids: [JSONValue] = [.string(b.id), "1", .string(a.id), .string(b.id)]
        let summaries = try await auth.call(
            "auth.getUsers", ["ids": .array(ids)], service: AuthStack.serviceSecret, as: [UserSummary].self)
        #expect(summaries.map(\.id.description) == [b.id, a.id, b.id])
        #expect(summaries.first?.username == b.username)

        let full = try await auth.call(
            "auth.getProfiles", ["ids": .array(ids), "viewerId": .string(a.id)], service: AuthStack.serviceSecret,
            as: [User].self)
        #expect(full.map(\.id.description) == [b.id, a.id, b.id])
        #expect(full[1].isCurrentUser && full[1].email == a.email)
        #expect(!full[0].isCurrentUser && full[0].email == nil)

        let none = try await auth.call("auth.getUsers", ["ids": []], service: AuthStack.serviceSecret, as: [UserSummary].self)
        #expect(none.isEmpty)
    }

    @Test func getUsersFindsNoOneUnderANameNoAccountCanHave() async throws {
        let auth = try await AuthStack.shared.main().api
        let a = try await auth.register()
        let names: [JSONValue] = ["ab\u{0}c", .string(String(repeating: "x", count: 100)), "a b", .string(a.username.uppercased())]
        let summaries = try await auth.call(
            "auth.getUsers", ["usernames": .array(names)], service: AuthStack.serviceSecret, as: [UserSummary].self)
        #expect(summaries.map(\.id.description) == [a.id])
    }

    @Test func getUsersValidatesIds() async throws {
        let auth = try await AuthStack.shared.main().api
        let tooMany = JSONValue.array((1...1001).map { .string(String($0)) })
        await expectRPCError(Code.validation, field: "ids") {
            _ = try await auth.call("auth.getUsers", ["ids": tooMany], service: AuthStack.serviceSecret)
        }
        await expectRPCError(Code.validation, field: "ids[1]") {
            _ = try await auth.call("auth.getUsers", ["ids": ["1", "x"]], service: AuthStack.serviceSecret)
        }
        await expectRPCError(Code.validation, field: "ids") {
            _ = try await auth.call("auth.getProfiles", ["ids": tooMany], service: AuthStack.serviceSecret)
        }
    }
}

/// Profiles hydrated from social-graph (here a stand-in that counts its calls).
@Suite struct GraphHydrationTests {
    @Test func fullUsersTakeOneBatchedCallOfEachKind() async throws {
        let (instance, graph) = try await AuthStack.shared.withGraph()
        let auth = instance.api
        let viewer = try await auth.register()
        let followed = try await auth.register()
        let follower = try await auth.register()
        let stranger = try await auth.register()
        graph.follow(viewer.id, followed.id)
        graph.follow(follower.id, viewer.id)
        let before = graph.calls(involving: stranger.id).count

        let users = try await auth.call(
            "auth.getProfiles",
            ["ids": [.string(followed.id), .string(follower.id), .string(stranger.id)], "viewerId": .string(viewer.id)],
            service: AuthStack.serviceSecret, as: [User].self)
        #expect(users.map(\.id.description) == [followed.id, follower.id, stranger.id])
        #expect(users[0].isFollowed && !users[0].followsYou)
        #expect(!users[1].isFollowed && users[1].followsYou)
        #expect(!users[2].isFollowed && !users[2].followsYou)
        for user in users {
            #expect(user.stats.followers == GraphStandIn.followers(of: user.id.description))
            #expect(user.stats.following == GraphStandIn.following(of: user.id.description))
            #expect(user.stats.tweets == 0)
        }

        let calls = graph.calls(involving: stranger.id).dropFirst(before)
        // One call for the counts and the relations together.
        #expect(calls.filter { $0.method == "graph.statsMany" }.count == 1)
        #expect(calls.filter { $0.method == "graph.relationships" }.isEmpty)
        #expect(calls.allSatisfy { Set($0.ids) == Set([followed.id, follower.id, stranger.id]) })
        #expect(calls.allSatisfy { $0.service == AuthStack.serviceSecret })
        #expect(calls.first { $0.method == "graph.statsMany" }?.viewerId == viewer.id)
    }

    @Test func getUserAndMeShowCountsAndRelations() async throws {
        let (instance, graph) = try await AuthStack.shared.withGraph()
        let auth = instance.api
        let viewer = try await auth.register()
        let other = try await auth.register()
        graph.follow(other.id, viewer.id)
        let seen = try await auth.call("auth.getUser", ["userId": .string(other.id)], token: viewer.token, as: User.self)
        #expect(seen.followsYou && !seen.isFollowed)
        #expect(seen.stats.followers == GraphStandIn.followers(of: other.id))
        let me = try await auth.me(viewer.token)
        #expect(me.stats.following == GraphStandIn.following(of: viewer.id) && !me.isFollowed && !me.followsYou)
        // Asking about oneself asks for no relations.
        #expect(!graph.calls(involving: viewer.id).contains { $0.viewerId == viewer.id })
    }

    @Test func searchRanksFollowedAccountsFirst() async throws {
        let (instance, graph) = try await AuthStack.shared.withGraph()
        let auth = instance.api
        let stem = Unique.word(7)
        let viewer = try await auth.register()
        // The exact match scores best, the longer names less; the viewer follows the weakest match.
        let exact = try await auth.register(["username": .string(stem)])
        let longer = try await auth.register(["username": .string(stem + "_ab")])
        let followed = try await auth.register(["username": .string(stem + "_xyz12")])
        graph.follow(viewer.id, followed.id)

        let anonymous = try await auth.call("auth.searchUsers", ["query": .string(stem)], as: Page<User>.self)
        #expect(anonymous.items.map(\.id.description) == [exact.id, longer.id, followed.id])

        let page = try await auth.call("auth.searchUsers", ["query": .string(stem)], token: viewer.token, as: Page<User>.self)
        #expect(page.items.map(\.id.description) == [followed.id, exact.id, longer.id])
        #expect(page.items.first?.isFollowed == true)
    }
}

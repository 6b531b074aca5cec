import AviaryAPI
import AviaryJSON
import RPC
import Testing

/// Every rule an account's fields follow is refused with `validation` naming the field.
@Suite struct ValidationTests {
    static let registrationCases: [(String, JSONValue)] = [
        ("email", .string("")),
        ("email", .string("no-at-sign.example.com")),
        ("email", .string("two@@example.com")),
        ("email", .string("name@localhost")),
        ("email", .string("name with space@example.com")),
        ("email", .string("name@exa mple.com")),
        ("email", .string(String(repeating: "a", count: 64) + "@" + String(repeating: "b", count: 186) + ".com")),
        ("email", .string("nul\u{0}@example.com")),
        ("username", .string("ab")),
        ("username", .string("abcdefghijklmnop")),
        ("username", .string("bad-name")),
        ("username", .string("émile")),
        ("username", .string("admin")),
        ("username", .string("Root")),
        ("username", .string("aviary_team")),
        ("username", .string("null")),
        ("fullname", .string("")),
        ("fullname", .string("   ")),
        ("fullname", .string(String(repeating: "n", count: 51))),
        ("fullname", .string("nul\u{0}byte")),
        ("bio", .string(String(repeating: "b", count: 161))),
        ("bio", .string("nul\u{0}byte")),
        ("password", .string("seven77")),
        ("password", .string(String(repeating: "p", count: 129))),
        ("profileImageId", .string("not-an-id")),
        ("profileImageId", .string("0")),
    ]

    @Test(arguments: registrationCases)
    func registrationRule(field: String, value: JSONValue) async throws {
        let auth = try await AuthStack.shared.main().api
        await expectRPCError(Code.validation, field: field) { _ = try await auth.register([field: value]) }
    }

    @Test func limitsAreInclusive() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register([
            "fullname": .string(String(repeating: "é", count: 50)), "bio": .string(String(repeating: "😀", count: 160)),
            "password": .string(String(repeating: "p", count: 128)),
        ])
        #expect(account.signIn.user.fullname.unicodeScalars.count == 50)
        #expect(account.signIn.user.bio.unicodeScalars.count == 160)
        _ = try await auth.register(["password": "eight888", "username": .string("abc" + Unique.word(3))])
    }

    @Test func missingParametersAreInvalidParams() async throws {
        let auth = try await AuthStack.shared.main().api
        let error = await expectRPCError(Code.invalidParams) {
            _ = try await auth.call("auth.register", ["email": "x@example.com", "password": "long enough", "username": "abcdef"])
        }
        #expect(error?.field == "fullname")
    }

    @Test func otherMethodsValidateTheirFields() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        await expectRPCError(Code.validation, field: "login") { _ = try await auth.login("", "whatever1") }
        await expectRPCError(Code.validation, field: "password") { _ = try await auth.login(account.username, "") }
        for (field, value) in [
            ("fullname", JSONValue.string("")), ("bio", .string(String(repeating: "b", count: 161))),
            ("username", "no"), ("username", "support"), ("profileImageId", "x1"),
        ] {
            await expectRPCError(Code.validation, field: field) {
                _ = try await auth.call("auth.updateProfile", [field: value], token: account.token)
            }
        }
        await expectRPCError(Code.validation, field: "query") {
            _ = try await auth.call("auth.searchUsers", ["query": "  "], token: account.token)
        }
        await expectRPCError(Code.validation, field: "query") {
            _ = try await auth.call("auth.searchUsers", ["query": .string(String(repeating: "q", count: 51))])
        }
        await expectRPCError(Code.validation, field: "cursor") {
            _ = try await auth.call("auth.searchUsers", ["query": "abc", "cursor": "not a cursor"])
        }
        await expectRPCError(Code.validation, field: "limit") {
            _ = try await auth.call("auth.searchUsers", ["query": "abc", "limit": 101])
        }
        await expectRPCError(Code.validation, field: "userId") { _ = try await auth.call("auth.getUser") }
        await expectRPCError(Code.validation, field: "userId") {
            _ = try await auth.call("auth.getUser", ["userId": .string(account.id), "username": .string(account.username)])
        }
        await expectRPCError(Code.validation, field: "userId") { _ = try await auth.call("auth.getUser", ["userId": "12a"]) }
        await expectRPCError(Code.validation, field: "username") { _ = try await auth.call("auth.getUser", ["username": "x"]) }
    }
}

/// Emails and usernames are unique whatever their case, and a refusal names the field.
@Suite struct ConflictTests {
    @Test func duplicateEmailAndUsernameAreConflictsNamingTheField() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        await expectRPCError(Code.conflict, field: "email") {
            _ = try await auth.register(["email": .string(account.email.uppercased())])
        }
        await expectRPCError(Code.conflict, field: "username") {
            _ = try await auth.register(["username": .string(account.username.uppercased())])
        }
        let other = try await auth.register()
        await expectRPCError(Code.conflict, field: "username") {
            _ = try await auth.call("auth.updateProfile", ["username": .string(account.username)], token: other.token)
        }
    }

    @Test func racingRegistrationsForOneEmailLetOneThrough() async throws {
        let auth = try await AuthStack.shared.main().api
        let email = "\(Unique.username())@example.com"
        try await expectOneWinner(auth, field: "email") { ["email": .string(email)] }
    }

    @Test func racingRegistrationsForOneUsernameLetOneThrough() async throws {
        let auth = try await AuthStack.shared.main().api
        let username = Unique.username()
        try await expectOneWinner(auth, field: "username") {
            ["username": .string(username), "email": .string("\(Unique.username())@example.com")]
        }
    }

    private func expectOneWinner(
        _ auth: AuthAPI, field: String, _ fields: @escaping @Sendable () -> [String: JSONValue]
    ) async throws {
        let outcomes = await withTaskGroup(of: Result<Account, RPCError>.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    do { return .success(try await auth.register(fields())) } catch let error as RPCError {
                        return .failure(error)
                    } catch {
                        return .failure(RPCError.internalError("\(error)"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let failures = outcomes.compactMap { outcome -> RPCError? in
            if case .failure(let error) = outcome { return error }
            return nil
        }
        #expect(outcomes.count - failures.count == 1)
        #expect(failures.count == 1)
        #expect(failures.first?.code == Code.conflict)
        #expect(failures.first?.field == field)
    }
}

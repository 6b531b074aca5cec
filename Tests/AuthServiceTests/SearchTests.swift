import AviaryAPI
import AviaryJSON
import Foundation
import Testing

/// `auth.searchUsers`: prefixes, typos and paging (social-graph down: no follow ranking).
@Suite struct SearchTests {
    @Test func findsByUsernamePrefixAndFullNameWord() async throws {
        let auth = try await AuthStack.shared.main().api
        let stem = Unique.word(8)
        let byName = try await auth.register(["username": .string(stem + "_1")])
        let byFullname = try await auth.register(["fullname": .string("Ada \(stem.capitalized) Lovelace")])
        let prefix = String(stem.prefix(5))
        let page = try await auth.call("auth.searchUsers", ["query": .string("@" + prefix.uppercased())], as: Page<User>.self)
        let ids = page.items.map(\.id.description)
        #expect(ids.contains(byName.id) && ids.contains(byFullname.id))
        #expect(page.items.allSatisfy { $0.email == nil })
    }

    @Test func toleratesATypo() async throws {
        let auth = try await AuthStack.shared.main().api
        let stem = Unique.word(9)
        let account = try await auth.register(["username": .string(stem), "fullname": .string("Mx \(stem.capitalized)")])
        // One letter dropped from the middle, one swapped pair: neither is a prefix.
        var letters = Array(stem)
        letters.remove(at: 4)
        let dropped = String(letters)
        letters = Array(stem)
        letters.swapAt(5, 6)
        let swapped = String(letters)
        for query in [dropped, swapped] where query != stem {
            let page = try await auth.call("auth.searchUsers", ["query": .string(query)], as: Page<User>.self)
            #expect(page.items.first?.id.description == account.id, "query \(query) for \(stem)")
        }
        // A surname typed with a letter left out.
        let surname = Unique.word(8)
        let named = try await auth.register(["fullname": .string("Ada \(surname.capitalized)")])
        var typo = Array(surname)
        typo.remove(at: 3)
        let page = try await auth.call("auth.searchUsers", ["query": .string(String(typo))], as: Page<User>.self)
        #expect(page.items.first?.id.description == named.id, "query \(String(typo)) for \(surname)")
    }

    @Test func pagesWithoutGapsOrRepeats() async throws {
        let auth = try await AuthStack.shared.main().api
        let stem = Unique.word(7)
        var expected: Set<String> = []
        for suffix in ["a", "bb", "ccc", "dddd", "eeeee"] {
            expected.insert(try await auth.register(["username": .string(stem + suffix)]).id)
        }
        var seen: [String] = []
        var cursor: String?
        repeat {
            var params: [String: JSONValue] = ["query": .string(stem), "limit": 2]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await auth.call("auth.searchUsers", .object(params), as: Page<User>.self)
            #expect(page.items.count <= 2)
            seen += page.items.map(\.id.description)
            cursor = page.nextCursor
        } while cursor != nil && seen.count < 20
        #expect(seen.count == Set(seen).count)
        #expect(Set(seen) == expected)
    }
}

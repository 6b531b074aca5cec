/// The OAuth scopes of a Mastodon app or token: `read`, `write`, `follow`, `push`, `profile` and
/// their sub-scopes (`read:statuses`, `write:media`, ...), as Mastodon documents them.
struct OAuthScopes: Sendable, Hashable {
    private(set) var names: Set<String>

    static let topLevel: Set<String> = ["read", "write", "follow", "push", "profile"]
    static let subScopes: Set<String> = [
        "read:accounts", "read:blocks", "read:bookmarks", "read:favourites", "read:filters", "read:follows", "read:lists",
        "read:mutes", "read:notifications", "read:search", "read:statuses",
        "write:accounts", "write:blocks", "write:bookmarks", "write:conversations", "write:favourites", "write:filters",
        "write:follows", "write:lists", "write:media", "write:mutes", "write:notifications", "write:reports",
        "write:statuses",
    ]
    /// What the legacy `follow` scope grants.
    private static let followGrants: Set<String> = [
        "read:blocks", "write:blocks", "read:follows", "write:follows", "read:mutes", "write:mutes",
    ]

    /// A scope Mastodon does not define.
    struct Unknown: Error {
        var name: String
    }

    /// Scopes as a client writes them, separated by spaces (or `+`), or the first unknown one.
    /// Empty text is Mastodon's default, `read`.
    static func parse(_ text: String?) -> Result<OAuthScopes, Unknown> {
        let words = (text ?? "").split { $0 == " " || $0 == "+" }.map(String.init)
        if words.isEmpty { return .success(OAuthScopes(names: ["read"])) }
        if let unknown = words.first(where: { !topLevel.contains($0) && !subScopes.contains($0) }) {
            return .failure(Unknown(name: unknown))
        }
        return .success(OAuthScopes(names: Set(words)))
    }

    /// Whether these scopes include every one of `other`'s (a token's within its app's).
    func covers(_ other: OAuthScopes) -> Bool {
        other.names.allSatisfy(allows)
    }

    /// Whether `scope` (`read:statuses`, or a top-level one) is granted, itself or through its
    /// parent (`read`) or the legacy `follow`.
    func allows(_ scope: String) -> Bool {
        if names.contains(scope) { return true }
        if let colon = scope.firstIndex(of: ":"), names.contains(String(scope[..<colon])) { return true }
        return names.contains("follow") && Self.followGrants.contains(scope)
    }

    /// As OAuth writes them: sorted, one space between.
    var text: String { names.sorted().joined(separator: " ") }
}

import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird

/// Mastodon's paging (`max_id`, `since_id`, `min_id`, `limit`, and `Link` headers) on the services'
/// keyset cursors. Statuses are ordered by id, and a tweet id is time-ordered, so `max_id` is the
/// cursor the services make after that tweet (``KeysetCursor/encodeID(_:)``). The services page
/// only towards older items: `since_id` and `min_id` are answered by reading from the newest (or
/// from `max_id`) down to that id, at most ``scanLimit`` items.
struct MastodonPaging {
    var maxID: Int64?
    var sinceID: Int64?
    var minID: Int64?
    var limit: Int

    /// The most items a `since_id` or `min_id` read looks through.
    static let scanLimit = 800
    /// The parameters a `Link` sets.
    static let cursorNames: Set<String> = ["max_id", "since_id", "min_id"]
    /// What a parameter in a `Link` keeps as it is: what a query may hold, and escapes.
    private static let linkSafe = CharacterSet.urlQueryAllowed.union(CharacterSet(charactersIn: "%"))
    /// Mastodon's most statuses per page.
    static let maximum = 40

    init(_ params: MastodonParams) throws(MastodonError) {
        maxID = try params.id("max_id")
        sinceID = try params.id("since_id")
        minID = try params.id("min_id")
        limit = try params.integer("limit", in: 1...Self.maximum) ?? 20
    }

    /// The page of items, newest first, read through `fetch` (a service's page at a cursor).
    func items<Item: Sendable>(
        id: (Item) -> Int64, _ fetch: (_ cursor: String?, _ limit: PageLimit) async throws -> Page<Item>
    ) async throws -> [Item] {
        var cursor = maxID.map(KeysetCursor.encodeID)
        guard let floor = minID ?? sinceID else { return try await fetch(cursor, PageLimit(limit)).items }
        var found: [Item] = []
        var scanned = 0
        while scanned < Self.scanLimit {
            let page = try await fetch(cursor, PageLimit(PageLimit.maximum))
            scanned += page.items.count
            let newer = page.items.prefix { id($0) > floor }
            found += newer
            if newer.count < page.items.count || page.nextCursor == nil || (minID == nil && found.count >= limit) { break }
            cursor = page.nextCursor
        }
        // since_id: the newest after the id; min_id: those just after it.
        return Array(minID == nil ? found.prefix(limit) : found.suffix(limit))
    }

    /// `Link` to the next page (older: `max_id=next`) and the previous one (newer: `min_id=prev`),
    /// on the request's own path and query: its parameters as the client wrote them (what a URI
    /// may not hold escaped), but those three.
    static func link(_ request: Request, origin: String, next: String?, prev: String?) -> HTTPFields {
        let kept = (request.uri.query ?? "").split(separator: "&").filter { parameter in
            let name = parameter.prefix { $0 != "=" }
            return !cursorNames.contains(name.contains("%") ? name.removingPercentEncoding ?? "" : String(name))
        }
        let query = kept.map { ($0.addingPercentEncoding(withAllowedCharacters: linkSafe) ?? "") + "&" }.joined()
        let base = origin + request.uri.path + "?" + query
        var links: [String] = []
        if let next { links.append(#"<\#(base)max_id=\#(next)>; rel="next""#) }
        if let prev { links.append(#"<\#(base)min_id=\#(prev)>; rel="prev""#) }
        return links.isEmpty ? [:] : [.link: links.joined(separator: ", ")]
    }
}

extension HTTPField.Name {
    static let link = HTTPField.Name("Link")!
}

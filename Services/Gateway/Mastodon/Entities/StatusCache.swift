import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Metrics

/// The statuses this gateway rendered lately, by the tweet entry a service wrote (its JSON, byte
/// for byte) and the origin they were rendered for. A status is a function of those two alone (the
/// entry holds the viewer's own flags, `likedByMe` and `repostedByMe`; a changed count, text or
/// profile is other bytes), so a page whose entries were seen before is neither decoded into
/// `Tweet`s nor rendered again: in a network whose timelines share popular tweets, most entries of
/// most pages. Nothing is ever stale, and nothing needs forgetting but room.
///
/// At most `capacity` entries, in two generations: entries go into the young one; when it is full
/// it becomes the old one (the old one's entries are dropped), and an entry found in the old one
/// moves back to the young. `capacity` 0 keeps nothing (`AVIARY_GATEWAY_STATUS_CACHE`).
///
/// Metrics: `aviary_gateway_status_cache_total` (counter, `result` `hit` or `miss`: entries found
/// rendered or not; none while nothing is kept).
final class StatusCache: Sendable {
    /// A status as the Mastodon API shows it, with the tweet it shows.
    struct Status: Sendable {
        let tweet: Tweet
        let json: RawJSON
    }

    private struct Key: Hashable {
        let origin: String
        let entry: [UInt8]
    }

    private struct Generations {
        var young: [Key: Status] = [:]
        var old: [Key: Status] = [:]
    }

    private let generationSize: Int
    private let generations = Locked(Generations())
    private let hits = Counter(label: "aviary_gateway_status_cache_total", dimensions: [("result", "hit")])
    private let misses = Counter(label: "aviary_gateway_status_cache_total", dimensions: [("result", "miss")])

    init(capacity: Int) {
        generationSize = capacity / 2
    }

    /// The page of tweet entries `page` (a service's `Page<Tweet>`, as it wrote it) as statuses
    /// rendered by `renderer`.
    func statuses(_ page: RawJSON, renderer: MastodonRenderer) throws -> Page<Status> {
        guard generationSize > 0, let members = JSONSplice.members(of: page.bytes),
            let items = members.first(where: { $0.key == "items" }), case let entries = Array(page.bytes[items.value]),
            let ranges = JSONSplice.elements(of: entries)
        else {
            // Nothing kept, or not the page it should be (decoded, for the decoder's error).
            return try Self.rendered(page.decode(Page<Tweet>.self), renderer)
        }
        let cursor = try members.first { $0.key == "nextCursor" }.flatMap {
            try RawJSON(unchecked: Array(page.bytes[$0.value])).decode(String?.self)
        }
        var statuses: [Status] = []
        statuses.reserveCapacity(ranges.count)
        for range in ranges {
            let key = Key(origin: renderer.origin, entry: Array(entries[range]))
            if let status = found(key) {
                statuses.append(status)
                continue
            }
            misses.increment()
            let status = Self.rendered(try RawJSON(unchecked: key.entry).decode(Tweet.self), renderer)
            keep(status, under: key)
            statuses.append(status)
        }
        return Page(items: statuses, nextCursor: cursor)
    }

    private static func rendered(_ tweet: Tweet, _ renderer: MastodonRenderer) -> Status {
        Status(tweet: tweet, json: RawJSON { renderer.writeStatus(tweet, to: &$0) })
    }

    private static func rendered(_ page: Page<Tweet>, _ renderer: MastodonRenderer) -> Page<Status> {
        Page(items: page.items.map { rendered($0, renderer) }, nextCursor: page.nextCursor)
    }

    private func found(_ key: Key) -> Status? {
        let status = generations.withLock { generations -> Status? in
            if let status = generations.young[key] { return status }
            guard let status = generations.old.removeValue(forKey: key) else { return nil }
            Self.insert(status, under: key, into: &generations, size: generationSize)
            return status
        }
        if status != nil { hits.increment() }
        return status
    }

    private func keep(_ status: Status, under key: Key) {
        generations.withLock { Self.insert(status, under: key, into: &$0, size: generationSize) }
    }

    private static func insert(_ status: Status, under key: Key, into generations: inout Generations, size: Int) {
        if generations.young.count >= size {
            generations.old = generations.young
            generations.young = Dictionary(minimumCapacity: size)
        }
        generations.young[key] = status
    }
}

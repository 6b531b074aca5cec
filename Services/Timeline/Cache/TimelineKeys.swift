/// Where the timeline service keeps things in Redis, all under `aviary:timeline:`.
///
/// A timeline (home or user) is one string, ``PackedTimeline``: a state byte, then its tweet ids
/// oldest first, 8 bytes each. Fan-out appends the newest id (`APPEND`, one call per set), a page is
/// a `GETRANGE` of the string's end, and an entry costs 8 bytes plus what Redis keeps spare.
/// Deployments from before kept timelines as sorted sets under the same names (``LegacyTimeline``);
/// the first read of one converts it.
enum TimelineKeys {
    /// A user's home timeline: the tweets of the user and of the authors they follow that are not celebrities.
    static func home(_ user: Int64) -> String { "aviary:timeline:home:\(user)" }
    /// An author's own recent tweets (for `timeline.user` and the read-time merge of celebrities).
    static func user(_ author: Int64) -> String { "aviary:timeline:user:\(author)" }
    /// Every author found to have more followers than the threshold; once in, an author stays in,
    /// so that the tweets fan-out skipped keep being merged at read time.
    static let celebrities = "aviary:timeline:celebrities"
    /// Incremented whenever `celebrities` gains a member, so cached lists of followed celebrities
    /// made before are recomputed. Tagged with `celebrities`' name: one script changes both, so on a
    /// Redis Cluster they share a slot.
    static let celebrityGeneration = "{\(celebrities)}:generation"
    /// A user's followed celebrities, `"<generation>:<id>,<id>…"`.
    static func followedCelebrities(_ user: Int64) -> String { "aviary:timeline:follows-celebrities:\(user)" }
    /// Incremented whenever someone follows or unfollows `author` (before the change is merged into
    /// the follower's home set), so that a fan-out from a list of followers read before cannot go
    /// through (``FollowerLists``).
    static func followersVersion(_ author: Int64) -> String { "aviary:timeline:followers-version:\(author)" }
    /// The lock of one rebuild of `timeline` (a home or user key).
    static func buildLock(_ timeline: String) -> String { "\(timeline):lock" }
}

/// A timeline as Redis holds it: one ``State`` byte, then the tweet ids, ascending (ids are
/// time-ordered, so oldest first), each as 8 bytes big-endian. Byte order is id order, so the
/// scripts (``TimelineScripts``) compare entries without numbers: Lua's numbers are doubles and
/// ids use 63 bits.
public struct PackedTimeline: Equatable, Sendable {
    /// What the state byte says of the ids that follow it.
    public enum State: UInt8, Sendable {
        /// Everything its source had: nothing was ever trimmed away (`W`).
        case whole = 0x57
        /// The newest entries up to the capacity; older ones exist (`T`).
        case truncated = 0x54
        /// Being rebuilt, or left half-built by a rebuild that died: fan-out adds to it, readers read
        /// from the services meanwhile (`B`).
        case building = 0x42
    }

    public var state: State
    /// The tweet ids, ascending.
    public var ids: [Int64]

    /// Bytes per entry.
    static let width = 8

    public init(state: State, ids: [Int64]) {
        self.state = state
        self.ids = ids
    }

    /// The timeline a string value holds; nil for an empty or malformed one.
    public init?(_ bytes: [UInt8]) {
        guard let first = bytes.first, let state = State(rawValue: first), (bytes.count - 1) % Self.width == 0 else { return nil }
        self.state = state
        ids = Self.ids(in: bytes[1...])
    }

    /// The string value: state byte and entries.
    public var bytes: [UInt8] { [state.rawValue] + Self.pack(ids) }

    /// `ids` as consecutive 8-byte big-endian entries (the `ARGV` form of the scripts).
    static func pack(_ ids: [Int64]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ids.count * width)
        for id in ids {
            withUnsafeBytes(of: id.bigEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The ids of consecutive entries (a trailing partial entry is ignored).
    static func ids(in entries: ArraySlice<UInt8>) -> [Int64] {
        var ids: [Int64] = []
        ids.reserveCapacity(entries.count / width)
        var offset = entries.startIndex
        while offset + width <= entries.endIndex {
            ids.append(id(in: entries, at: offset))
            offset += width
        }
        return ids
    }

    /// The id of the entry at `offset`.
    private static func id(in entries: ArraySlice<UInt8>, at offset: Int) -> Int64 {
        var value: UInt64 = 0
        for byte in entries[offset..<offset + width] { value = value << 8 | UInt64(byte) }
        return Int64(bitPattern: value)
    }

    /// How many entries a value of `length` bytes holds (`STRLEN`).
    public static func entryCount(ofLength length: Int) -> Int {
        max(0, (length - 1) / width)
    }

    /// The newest id of a timeline from its last 8 bytes (`GETRANGE key -8 -1`); nil when it has no entry.
    public static func newestID(inEnd bytes: [UInt8]) -> Int64? {
        bytes.count == width ? id(in: bytes[...], at: 0) : nil
    }

    /// The newest `count` ids strictly before `before` (all when nil) of a whole string value,
    /// newest first, found by binary search.
    static func newest(_ count: Int, before: Int64?, in value: [UInt8]) -> [Int64] {
        let entries = value.dropFirst()
        let end = before.map { olderCount(than: $0, in: entries) } ?? entries.count / width
        let start = max(0, end - count)
        return ids(in: entries[(entries.startIndex + start * width)..<(entries.startIndex + end * width)]).reversed()
    }

    /// The oldest `count` ids from `from` on (it included) of a whole string value, oldest first:
    /// the entries just above a page's cursor.
    static func oldest(_ count: Int, from: Int64, in value: [UInt8]) -> [Int64] {
        let entries = value.dropFirst()
        let start = olderCount(than: from, in: entries)
        let end = min(entries.count / width, start + count)
        return ids(in: entries[(entries.startIndex + start * width)..<(entries.startIndex + end * width)])
    }

    /// How many of `entries` (ascending) are older than `id`, by binary search.
    private static func olderCount(than id: Int64, in entries: ArraySlice<UInt8>) -> Int {
        var (low, end) = (0, entries.count / width)
        while low < end {
            let middle = (low + end) / 2
            if self.id(in: entries, at: entries.startIndex + middle * width) < id { low = middle + 1 } else { end = middle }
        }
        return low
    }
}

/// What the state byte says about a timeline.
enum TimelineState: Equatable {
    /// No timeline (never built, expired, or Redis lost it).
    case missing
    /// Being rebuilt, or left half-built by a rebuild that died.
    case building
    /// Complete; `whole` when nothing older than its last entry exists.
    case ready(whole: Bool)

    /// The state from the reply of `GETRANGE key 0 0`.
    init(stateByte reply: [UInt8]?) {
        switch reply?.first.flatMap(PackedTimeline.State.init(rawValue:)) {
        case nil: self = .missing
        case .whole: self = .ready(whole: true)
        case .truncated: self = .ready(whole: false)
        case .building: self = .building
        }
    }
}

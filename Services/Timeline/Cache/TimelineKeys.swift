/// Where the timeline service keeps things in Redis, all under `aviary:timeline:`.
///
/// Timelines are sorted sets whose scores are all zero and whose members are tweet ids written as
/// 19 zero-padded decimal digits: with equal scores Redis orders members byte by byte, so the set is
/// in id order (ids are time-ordered), and `ZRANGE … BYLEX` pages by exact id. A score could not
/// carry the id itself: ids use 63 bits and a double keeps 53.
enum TimelineKeys {
    /// A user's home timeline: the tweets of the user and of the authors they follow that are not celebrities.
    static func home(_ user: Int64) -> String { "aviary:timeline:home:\(user)" }
    /// An author's own recent tweets (for `timeline.user` and the read-time merge of celebrities).
    static func user(_ author: Int64) -> String { "aviary:timeline:user:\(author)" }
    /// Every author found to have more followers than the threshold; once in, an author stays in,
    /// so that the tweets fan-out skipped keep being merged at read time.
    static let celebrities = "aviary:timeline:celebrities"
    /// Incremented whenever `celebrities` gains a member, so cached lists of followed celebrities
    /// made before are recomputed.
    static let celebrityGeneration = "aviary:timeline:celebrities:generation"
    /// A user's followed celebrities, `"<generation>:<id>,<id>…"`.
    static func followedCelebrities(_ user: Int64) -> String { "aviary:timeline:follows-celebrities:\(user)" }
    /// Incremented whenever someone follows or unfollows `author` (before the change is merged into
    /// the follower's home set), so that a fan-out from a list of followers read before cannot go
    /// through (``FollowerLists``).
    static func followersVersion(_ author: Int64) -> String { "aviary:timeline:followers-version:\(author)" }
    /// The lock of one rebuild of `timeline` (a home or user key).
    static func buildLock(_ timeline: String) -> String { "\(timeline):lock" }
}

/// The members of a timeline sorted set.
enum TimelineMember {
    /// The set holds everything its source had (nothing was ever trimmed away).
    static let whole = "0000000000000000000"
    /// The set was built and holds the newest entries up to the capacity; older ones exist.
    static let truncated = "0000000000000000001"
    /// The set is being rebuilt: fan-out already adds to it; readers read from the services meanwhile.
    static let building = "0000000000000000002"
    /// The exclusive lower bound of real entries in `ZRANGE … BYLEX`: every sentinel sorts below any id.
    static let lowestEntry = "(" + building

    /// An id as a member: 19 digits, zero-padded, so that byte order is numeric order.
    static func encode(_ id: Int64) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 19 - digits.utf8.count)) + digits
    }

    /// The id of a member, or nil for a sentinel or anything malformed.
    static func decode(_ bytes: [UInt8]) -> Int64? {
        guard bytes.count == 19 else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= 48 && byte <= 57 else { return nil }
            value = value &* 10 &+ Int64(byte - 48)
        }
        return value > 2 ? value : nil
    }

    /// The `max` of a newest-first `ZRANGE … BYLEX REV`: everything, or strictly before `id`.
    static func upperBound(before id: Int64?) -> String {
        id.map { "(" + encode($0) } ?? "+"
    }
}

/// What the lowest member of a timeline set says about it.
enum TimelineState: Equatable {
    /// No set (never built, expired, or Redis lost it).
    case missing
    /// Being rebuilt, or left half-built by a rebuild that died.
    case building
    /// Complete; `whole` when nothing older than its last entry exists.
    case ready(whole: Bool)

    /// The state from the reply of `ZRANGE key 0 0`.
    init(lowestMember reply: [UInt8]?) {
        switch reply.map({ String(decoding: $0, as: UTF8.self) }) {
        case nil: self = .missing
        case TimelineMember.whole: self = .ready(whole: true)
        case TimelineMember.truncated: self = .ready(whole: false)
        default: self = .building
        }
    }
}

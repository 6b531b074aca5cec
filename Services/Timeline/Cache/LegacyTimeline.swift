/// The layout timelines had before ``PackedTimeline``: a sorted set under the same key, every score
/// zero, every member a tweet id written as 19 zero-padded digits, and its lowest member a sentinel
/// (`…0` whole, `…1` truncated, `…2` building). At 121 bytes an entry it is what issue 44 replaced.
///
/// A deployment that upgrades keeps its timelines: fan-out goes on adding to (and deleting from) a
/// set of this layout, and the first read of one converts it (``TimelineCache``), in Redis alone.
/// Sets nobody reads expire with their lifetime as before.
public enum LegacyTimeline {
    private static let whole = "0000000000000000000"
    private static let truncated = "0000000000000000001"

    /// An id as a member: 19 digits, zero-padded.
    public static func member(_ id: Int64) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 19 - digits.utf8.count)) + digits
    }

    /// The timeline the members of a set (`ZRANGE key 0 -1`, ascending) held. A set without a
    /// sentinel of a complete set is taken as being built.
    static func timeline(members: [[UInt8]]) -> PackedTimeline {
        let state: PackedTimeline.State
        switch members.first.map({ String(decoding: $0, as: UTF8.self) }) {
        case whole: state = .whole
        case truncated: state = .truncated
        default: state = .building
        }
        let ids = members.compactMap { bytes -> Int64? in
            guard bytes.count == 19, bytes.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(String(decoding: bytes, as: UTF8.self)).flatMap { $0 > 2 ? $0 : nil }
        }
        return PackedTimeline(state: state, ids: ids)
    }
}

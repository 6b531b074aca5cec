import RPC

/// The contract's text limits (§2), counted in Unicode scalars, with the errors that name the field.
public enum TextRules {
    /// The default longest tweet (`AVIARY_TWEETS_MAX_LENGTH` sets another).
    public static let tweetLimit = 280
    /// What a link (`http://…`, `https://…`) counts for in a tweet's length, whatever its own
    /// length, as Twitter counts its shortened links.
    public static let linkWeight = 23
    /// A tweet's text is refused past this many scalars as written, links counted in full, so
    /// that long links cannot carry an unbounded text: four times its limit.
    public static let rawTweetFactor = 4
    public static let bioLimit = 160
    public static let fullnameLimit = 50
    public static let messageLimit = 4000
    public static let usernameLength = 3...15

    /// Trims surrounding white space and checks the length: `validation` naming `field` otherwise.
    /// Where the text may not be empty, text of nothing but invisible characters (zero-width
    /// spaces, joiners, marks of direction: default-ignorable code points) counts as empty.
    public static func text(_ value: String, field: String, allowed: ClosedRange<Int>) throws(RPCError) -> String {
        var trimmed = value.trimmingWhitespace()
        if allowed.lowerBound > 0,
            trimmed.unicodeScalars.allSatisfy({ $0.properties.isDefaultIgnorableCodePoint || $0.properties.isWhitespace })
        {
            trimmed = ""
        }
        let count = trimmed.unicodeScalars.count
        guard allowed.contains(count) else {
            if count < allowed.lowerBound {
                throw RPCError.validation(
                    allowed.lowerBound == 1 ? "\(field) must not be empty" : "\(field) must be at least \(allowed.lowerBound) characters",
                    field: field)
            }
            throw RPCError.validation("\(field) must be at most \(allowed.upperBound) characters, got \(count)", field: field)
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.value == 0 }) else {
            throw RPCError.validation("\(field) must not contain NUL characters", field: field)
        }
        return trimmed
    }

    /// A tweet's text: trimmed, not empty, at most `limit` characters with every link counted as
    /// ``linkWeight``, and at most ``rawTweetFactor`` × `limit` as written.
    public static func tweet(_ value: String, field: String = "text", limit: Int) throws(RPCError) -> String {
        let trimmed = try text(value, field: field, allowed: 1...(limit * rawTweetFactor))
        let length = weightedLength(trimmed)
        guard length <= limit else {
            throw RPCError.validation(
                "\(field) must be at most \(limit) characters (a link counts as \(linkWeight)), got \(length)", field: field)
        }
        return trimmed
    }

    /// Unicode scalars, each `http://` or `https://` link (up to the next white space) counted as ``linkWeight``.
    public static func weightedLength(_ text: String) -> Int {
        let scalars = Array(text.unicodeScalars)
        var length = 0
        var index = 0
        while index < scalars.count {
            if (index == 0 || isWhitespace(scalars[index - 1])), let end = linkEnd(scalars, from: index) {
                length += linkWeight
                index = end
            } else {
                length += 1
                index += 1
            }
        }
        return length
    }

    /// Where the link starting at `start` ends, if one starts there.
    public static func linkEnd(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        for scheme in linkSchemes {
            // In any case; only ASCII letters lower-case to the schemes' letters.
            guard start + scheme.count < scalars.count,
                scheme.indices.allSatisfy({ offset in
                    let value = scalars[start + offset].value
                    return (0x41...0x5A).contains(value) ? value | 0x20 == scheme[offset] : value == scheme[offset]
                })
            else { continue }
            var end = start + scheme.count
            while end < scalars.count, !isWhitespace(scalars[end]) { end += 1 }
            return end > start + scheme.count ? end : nil
        }
        return nil
    }

    private static let linkSchemes: [[UInt32]] = ["https://", "http://"].map { $0.unicodeScalars.map(\.value) }

    /// Unicode's White_Space; ASCII (tab to carriage return, and space) without the tables.
    public static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII ? scalar == " " || (0x09...0x0D).contains(scalar.value) : scalar.properties.isWhitespace
    }

    /// Letters, digits, combining marks and `_`: what a name or a word is made of, in any script
    /// (mentions and hashtags are runs of them). ASCII is decided without the Unicode tables: a
    /// page of statuses asks this of every letter.
    public static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let value = scalar.value | 0x20  // upper-case letters as lower-case
            return (0x61...0x7A).contains(value) || (0x30...0x39).contains(scalar.value) || scalar == "_"
        }
        let properties = scalar.properties
        return properties.isAlphabetic || properties.numericType != nil || scalar == "_"
            || properties.generalCategory == .nonspacingMark || properties.generalCategory == .spacingMark
    }

    /// A username: 3–15 of `[a-z0-9_]` after lower-casing.
    public static func username(_ value: String, field: String = "username") throws(RPCError) -> String {
        let lowered = value.lowercased()
        guard usernameLength.contains(lowered.unicodeScalars.count),
            lowered.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        else {
            throw RPCError.validation("\(field) must be 3 to 15 characters of a-z, 0-9 and _", field: field)
        }
        return lowered
    }
}

extension String {
    /// The string without leading and trailing white space and newlines (Unicode-aware, no Foundation).
    public func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}

import RPC

/// The contract's text limits (§2), counted in Unicode scalars, with the errors that name the field.
public enum TextRules {
    public static let tweetLimit = 280
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

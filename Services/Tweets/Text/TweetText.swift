import AviaryAPI
import Foundation

/// What a tweet's text refers to: `@mentions` and `#hashtags`, lower-cased, each once, in order of
/// first appearance. Hashtags are also composed (Unicode NFC), so that `#café` typed with a
/// combining accent is the same tag as with `é`, as it reads, and as search finds it. A marker counts only at the start of the text or after a character that
/// cannot be part of a name (so `me@example.com` mentions no one and `C#` is no hashtag).
struct TweetText: Sendable, Equatable {
    /// Usernames mentioned (3–15 of `a-z 0-9 _`), without `@`.
    var mentions: [String]
    /// Hashtags (letters, digits and `_`, at most 100), without `#`.
    var hashtags: [String]

    static let hashtagLimit = 100

    init(_ text: String) {
        var mentions: [String] = []
        var hashtags: [String] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            let startsWord = index == 0 || !TextRules.isNameScalar(scalars[index - 1])
            guard startsWord, scalar == "@" || scalar == "#" else {
                index += 1
                continue
            }
            var end = index + 1
            if scalar == "@" {
                while end < scalars.count, Self.isUsernameScalar(scalars[end]) { end += 1 }
                // A longer run is not a username at all, rather than a shorter one.
                let length = end - index - 1
                if (3...15).contains(length), end == scalars.count || !TextRules.isNameScalar(scalars[end]) {
                    let name = String(String.UnicodeScalarView(scalars[(index + 1)..<end])).lowercased()
                    if !mentions.contains(name) { mentions.append(name) }
                }
            } else {
                while end < scalars.count, TextRules.isNameScalar(scalars[end]) { end += 1 }
                let length = end - index - 1
                if (1...Self.hashtagLimit).contains(length) {
                    let tag = String(String.UnicodeScalarView(scalars[(index + 1)..<end])).precomposedStringWithCanonicalMapping
                        .lowercased()
                    if !hashtags.contains(tag) { hashtags.append(tag) }
                }
            }
            index = max(end, index + 1)
        }
        self.mentions = mentions
        self.hashtags = hashtags
    }

    private static func isUsernameScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_")
    }
}

import AviaryAPI
import Foundation

/// A status's `content` as Mastodon writes it: HTML paragraphs, line breaks as `<br>`, and the
/// tweet's mentions, hashtags and links as links (with Mastodon's classes, which clients style).
/// Only what the tweets service recognized becomes a link: an `@name` of a user it matched, a
/// `#tag` it stored.
struct StatusHTML {
    let renderer: MastodonRenderer

    func content(of tweet: Tweet) -> String {
        guard let text = tweet.text else { return "" }
        let mentioned = Dictionary(tweet.mentions.map { ($0.username.lowercased(), $0) }) { first, _ in first }
        let tags = Set(tweet.hashtags)
        return Self.paragraphs(text) { scalars, index in
            let scalar = scalars[index]
            let startsWord = index == 0 || !TextRules.isNameScalar(scalars[index - 1])
            if startsWord, scalar == "@" || scalar == "#" {
                var end = index + 1
                while end < scalars.count, TextRules.isNameScalar(scalars[end]) { end += 1 }
                let name = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                if scalar == "@", let user = mentioned[name.lowercased()] {
                    let link = #"<span class="h-card" translate="no"><a href="\#(Self.escape(renderer.profileURL(user.username)))" class="u-url mention">@<span>\#(Self.escape(name))</span></a></span>"#
                    return (link, end)
                }
                let tag = name.precomposedStringWithCanonicalMapping.lowercased()
                if scalar == "#", tags.contains(tag) {
                    let link = #"<a href="\#(Self.escape(renderer.tagURL(tag)))" class="mention hashtag" rel="tag">#<span>\#(Self.escape(name))</span></a>"#
                    return (link, end)
                }
            }
            if index == 0 || TextRules.isWhitespace(scalars[index - 1]), let end = TextRules.linkEnd(scalars, from: index) {
                let url = Self.escape(String(String.UnicodeScalarView(scalars[index..<end])))
                return (#"<a href="\#(url)" target="_blank" rel="nofollow noopener noreferrer" translate="no">\#(url)</a>"#, end)
            }
            return nil
        }
    }

    /// Plain text as HTML paragraphs (a blank line between two), escaped, with `<br>` for a line
    /// break; `link` may turn the text at an index into markup, saying where it ends.
    static func paragraphs(
        _ text: String, link: ([Unicode.Scalar], Int) -> (html: String, end: Int)? = { _, _ in nil }
    ) -> String {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty else { return "" }
        // Written as UTF-8 bytes: appending to a String scalar by scalar cost most of a status's
        // rendering.
        var html: [UInt8] = Array("<p>".utf8)
        html.reserveCapacity(trimmed.utf8.count + 64)
        let scalars = Array(trimmed.unicodeScalars)
        var index = 0
        while index < scalars.count {
            if scalars[index] == "\n" {
                var end = index
                while end < scalars.count, scalars[end] == "\n" || scalars[end] == "\r" { end += 1 }
                html += (scalars[index..<end].filter { $0 == "\n" }.count > 1 ? "</p><p>" : "<br />").utf8
                index = end
            } else if let (markup, end) = link(scalars, index) {
                html += markup.utf8
                index = end
            } else {
                append(scalars[index], to: &html)
                index += 1
            }
        }
        html += "</p>".utf8
        return String(decoding: html, as: UTF8.self)
    }

    static func escape(_ text: String) -> String {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars { append(scalar, to: &escaped) }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// `scalar` escaped for HTML text and attribute values, as UTF-8.
    private static func append(_ scalar: Unicode.Scalar, to html: inout [UInt8]) {
        switch scalar {
        case "&": html += "&amp;".utf8
        case "<": html += "&lt;".utf8
        case ">": html += "&gt;".utf8
        case "\"": html += "&quot;".utf8
        case "'": html += "&#39;".utf8
        default:
            UTF8.encode(scalar) { html.append($0) }
        }
    }
}

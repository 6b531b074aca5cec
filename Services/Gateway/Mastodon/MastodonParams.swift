import AviaryJSON
import Foundation
import HTTPTypes

/// The parameters of a Mastodon API call, from wherever its client put them: the query, a form
/// body (`application/x-www-form-urlencoded`, Mastodon.py's way) or a JSON object. Arrays come as
/// repeated `name[]=` (or `name=`) or as JSON arrays; a name may appear with or without `[]`.
struct MastodonParams: Sendable {
    private var values: [String: [String]] = [:]

    init() {}

    /// The pairs of `name=value&...`, percent-decoded (`+` a space).
    init(form: String) {
        for pair in form.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            add(Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : "")
        }
    }

    /// The members of a JSON object: scalars as their text, arrays as repeated values, and the
    /// members of an object member as a form names them (`poll[options]`).
    init(json: JSONValue) throws(MastodonError) {
        guard case .object(let members) = json else {
            throw MastodonError(status: .badRequest, message: "The request body must be a JSON object")
        }
        add(members, prefix: nil)
    }

    private mutating func add(_ members: [String: JSONValue], prefix: String?) {
        for (member, value) in members {
            let name = prefix.map { "\($0)[\(member)]" } ?? member
            for item in value.arrayValue ?? [value] {
                switch item {
                case .string(let text): add(name, text)
                case .int(let number): add(name, String(number))
                case .double(let number): add(name, String(number))
                case .bool(let flag): add(name, flag ? "true" : "false")
                case .object(let inner) where prefix == nil: add(inner, prefix: name)
                default: continue
                }
            }
        }
    }

    /// These and then `other`'s values (a body's after the query's).
    func merging(_ other: MastodonParams) -> MastodonParams {
        var merged = self
        for (name, list) in other.values { merged.values[name, default: []] += list }
        return merged
    }

    mutating func add(_ name: String, _ value: String) {
        let key = name.hasSuffix("[]") ? String(name.dropLast(2)) : name
        values[key, default: []].append(value)
    }

    /// The first value of `name`, nil when absent or empty.
    subscript(name: String) -> String? {
        values[name]?.first.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Every non-empty value of `name` (`name[]=a&name[]=b`).
    func list(_ name: String) -> [String] {
        (values[name] ?? []).filter { !$0.isEmpty }
    }

    /// `name` as text of at most `limit` characters.
    func text(_ name: String, atMost limit: Int) throws(MastodonError) -> String? {
        guard let value = self[name] else { return nil }
        guard value.count <= limit else { throw .validation(name, "is too long (maximum is \(limit) characters)") }
        return value
    }

    /// `name` as an integer in `range`.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(MastodonError) -> Int? {
        guard let value = self[name] else { return nil }
        guard let number = Int(value), range.contains(number) else {
            throw .validation(name, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `name` as an id (digits, positive).
    func id(_ name: String) throws(MastodonError) -> Int64? {
        guard let value = self[name] else { return nil }
        guard let id = MastodonParams.id(value) else { throw .validation(name, "is not an id") }
        return id
    }

    /// `name` as a boolean as Rails reads one: `true`, `1`, `on` are true.
    func flag(_ name: String) -> Bool? {
        self[name].map { ["true", "1", "on", "t"].contains($0.lowercased()) }
    }

    /// An id as Mastodon writes one (a string of digits), or nil.
    static func id(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }),
            let id = Int64(text), id > 0
        else { return nil }
        return id
    }

    private static func decode(_ raw: Substring) -> String {
        // Most names and values (`limit=20`) have nothing to decode: no trip through Foundation.
        guard raw.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else { return String(raw) }
        let spaced = raw.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

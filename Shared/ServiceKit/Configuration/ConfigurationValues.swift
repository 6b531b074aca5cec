import Foundation

/// The merged `KEY=VALUE` settings (config file, then environment on top), with the parsers that
/// turn one into a typed value or a ``ConfigurationError`` naming it.
///
/// An empty value counts as unset, as systemd's `Environment=KEY=` does.
struct ConfigurationValues: Sendable {
    private var values: [String: String]

    init(file: [String: String], environment: [String: String]) {
        self.values = file.filter { !$0.value.isEmpty }
        for (key, value) in environment where key.hasPrefix("AVIARY_") && !value.isEmpty {
            self.values[key] = value
        }
    }

    subscript(key: String) -> String? { self.values[key] }

    /// The entries of a comma-separated value, trimmed, empty ones left out.
    static func commaSeparated(_ raw: String) -> [String] {
        raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func string(_ key: String, default defaultValue: String) -> String {
        self.values[key] ?? defaultValue
    }

    func integer(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        try integer(key, in: range) ?? defaultValue
    }

    /// The integer in `range` that `key` holds; nil when it is unset.
    func integer(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let raw = self.values[key] else { return nil }
        guard let value = Int(raw.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            throw ConfigurationError(
                variable: key,
                message: "\(key) must be an integer \(range.lowerBound)...\(range.upperBound), got '\(raw)'")
        }
        return value
    }

    /// One of a fixed set of words, matched case-insensitively.
    func choice<Value>(_ key: String, default defaultValue: Value, from choices: KeyValuePairs<String, Value>)
        throws -> Value
    {
        guard let raw = self.values[key] else { return defaultValue }
        let word = raw.trimmingCharacters(in: .whitespaces).lowercased()
        guard let match = choices.first(where: { $0.key == word }) else {
            let accepted = choices.map(\.key).joined(separator: ", ")
            throw ConfigurationError(variable: key, message: "\(key) must be one of \(accepted), got '\(raw)'")
        }
        return match.value
    }

    /// A URL whose scheme must be one of `schemes`; the value is not repeated in the error because
    /// it may carry a password.
    func url(_ key: String, default defaultValue: String, schemes: [String]) throws -> String {
        guard let raw = self.values[key] else { return defaultValue }
        return try Self.url(raw, of: key, schemes: schemes)
    }

    /// `raw`, one URL given for `key`, trimmed, when its scheme is one of `schemes`.
    static func url(_ raw: String, of key: String, schemes: [String]) throws -> String {
        let value = raw.trimmingCharacters(in: .whitespaces)
        let hasScheme = schemes.contains { value.lowercased().hasPrefix("\($0)://") }
        let rest = value.drop(while: { $0 != ":" }).dropFirst(3)
        guard hasScheme, !rest.isEmpty, !rest.contains(where: \.isWhitespace) else {
            let names = schemes.map { "\($0)://" }
            let accepted = names.count > 2 ? names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "") : names.joined(separator: " or ")
            throw ConfigurationError(
                variable: key, message: "\(key) must be a URL starting with \(accepted) (value not shown)")
        }
        return value
    }
}

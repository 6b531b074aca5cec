import Foundation

/// Reads the optional file named by `AVIARY_CONFIG_FILE`: `KEY=VALUE` lines, blank lines and
/// `#` comment lines. Keys and values are trimmed; a value wrapped in matching single or double
/// quotes loses them. A `#` after a value is part of the value (passwords may contain one).
///
/// These are the rules of systemd's `EnvironmentFile=`, which reads the same files in deploy/systemd.
/// swift-configuration's environment-file provider (1.4.0) reads them otherwise: it keeps the quotes,
/// skips `export` lines, and drops a malformed line without a word; on the file of
/// `ServiceConfigurationTests.configFileWithEnvironmentOverrides`, 3 of its 6 settings came out different.
enum ConfigurationFile {
    static let variable = "AVIARY_CONFIG_FILE"

    static func load(path: String) throws -> [String: String] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError(
                variable: variable, message: "\(variable) names '\(path)', which cannot be read")
        }
        guard let contents = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(
                variable: variable, message: "\(variable) names '\(path)', which is not UTF-8 text")
        }
        return try parse(contents, path: path)
    }

    static func parse(_ contents: String, path: String) throws -> [String: String] {
        var values: [String: String] = [:]
        for (index, rawLine) in contents.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
        {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            // Lines are not echoed in errors: a malformed one may be a pasted secret.
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(
                    variable: variable,
                    message: "\(variable) '\(path)' line \(index + 1) must be KEY=VALUE or a # comment")
            }
            var key = line[..<equals].trimmingCharacters(in: .whitespaces)
            if key.hasPrefix("export ") {
                key = key.dropFirst("export ".count).trimmingCharacters(in: .whitespaces)
            }
            guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else {
                throw ConfigurationError(
                    variable: variable,
                    message:
                        "\(variable) '\(path)' line \(index + 1) must start with a key of letters, digits and _")
            }
            values[key] = unquote(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        return values
    }

    private static func unquote(_ value: String) -> String {
        guard value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first
        else { return value }
        return String(value.dropFirst().dropLast())
    }
}

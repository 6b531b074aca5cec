/// How log lines are written (`AVIARY_LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// One human-readable line: `2026-11-21T22:35:00.123Z info auth: message key=value`.
    case text
    /// One JSON object per line: `{"ts":…,"level":…,"service":…,"msg":…,…metadata}`.
    case json

    public var description: String { self.rawValue }
}

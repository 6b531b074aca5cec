import Foundation

/// The last `lines` lines of a log file, for error messages.
func logTail(_ path: String, lines: Int = 40) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        return "(no log at \(path))"
    }
    let tail = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines)
    return "--- last lines of \(path) ---\n" + tail.joined(separator: "\n")
}

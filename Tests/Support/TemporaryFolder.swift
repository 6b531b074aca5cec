import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh folder of our own under `$TMPDIR` (or `/tmp`), made with `mkdtemp`.
struct TemporaryFolder: Sendable {
    let path: String

    /// Set `AVIARY_TEST_KEEP_FOLDERS=1` to keep server data and logs after the tests, for debugging.
    static let keepAfterTests =
        ProcessInfo.processInfo.environment["AVIARY_TEST_KEEP_FOLDERS"] == "1"

    static func create(_ name: String) throws -> TemporaryFolder {
        var base = ProcessInfo.processInfo.environment["TMPDIR"] ?? ""
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        if base.isEmpty { base = "/tmp" }
        var template = Array("\(base)/aviary-\(name)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw TestSupportError(
                "cannot create a folder under \(base): \(String(cString: strerror(errno)))")
        }
        return TemporaryFolder(path: String(cString: created))
    }

    func file(_ name: String) -> String {
        path + "/" + name
    }

    func remove() {
        guard !Self.keepAfterTests else { return }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A fresh folder for a suite's own files (`aviary-<name>-XXXXXX` under `$TMPDIR`), removed when the
/// test process exits, like the harness's.
public func temporaryFolderForThisRun(_ name: String) throws -> String {
    let folder = try TemporaryFolder.create(name)
    _ = ExitCleanup.register(folder)
    return folder.path
}

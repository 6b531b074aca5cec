import Foundation

/// The folder of the PostgreSQL server programs: `AVIARY_TEST_PG_BIN`, else the highest version in
/// `/usr/lib/postgresql/*/bin` (Debian's layout), else the folder of `initdb` in `$PATH`.
struct PostgresInstallation: Sendable {
    let binFolder: String

    func tool(_ name: String) -> String {
        binFolder + "/" + name
    }

    static func find() throws -> PostgresInstallation {
        if let folder = ProcessInfo.processInfo.environment["AVIARY_TEST_PG_BIN"], !folder.isEmpty {
            return PostgresInstallation(binFolder: folder)
        }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let newest =
            versions
            .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .max { $0.compare($1, options: .numeric) == .orderedAscending }
        if let newest {
            return PostgresInstallation(binFolder: "\(root)/\(newest)/bin")
        }
        if let initdb = findExecutable("initdb") {
            return PostgresInstallation(binFolder: (initdb as NSString).deletingLastPathComponent)
        }
        throw TestSupportError(
            "PostgreSQL server programs not found in \(root)/*/bin or $PATH "
                + "(apt-get install postgresql)")
    }
}

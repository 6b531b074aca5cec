import Foundation

/// Finds the executables built with the tests: the running test binary lives in the build products
/// folder (`.build/<triple>/debug`), and so do `aviary-auth` and the others. `AVIARY_BUILD_PRODUCTS`
/// names the folder explicitly.
enum BuildProducts {
    static func executable(named name: String) throws -> String {
        var candidates: [String] = []
        if let folder = ProcessInfo.processInfo.environment["AVIARY_BUILD_PRODUCTS"],
            !folder.isEmpty
        {
            candidates.append(folder + "/" + name)
        }
        for start in runningBinaryPaths() {
            var folder = (start as NSString).deletingLastPathComponent
            // The bundle on macOS is `X.xctest/Contents/MacOS/X`: a few levels cover every layout.
            for _ in 0..<5 where folder.count > 1 {
                candidates.append(folder + "/" + name)
                folder = (folder as NSString).deletingLastPathComponent
            }
        }
        let isExecutable = { FileManager.default.isExecutableFile(atPath: $0) }
        if let found = candidates.first(where: isExecutable) {
            return found
        }
        let folders = Set(candidates.map { ($0 as NSString).deletingLastPathComponent }).sorted()
        throw TestSupportError(
            "\(name) not found next to the test binary, in \(folders.joined(separator: ", ")); "
                + "build it first: swift build --build-tests")
    }

    private static func runningBinaryPaths() -> [String] {
        var paths: [String] = []
        let files = FileManager.default
        if let resolved = try? files.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            paths.append(resolved)
        }
        if let main = Bundle.main.executablePath { paths.append(main) }
        if let first = CommandLine.arguments.first {
            paths.append(first.hasPrefix("/") ? first : files.currentDirectoryPath + "/" + first)
        }
        return paths
    }
}

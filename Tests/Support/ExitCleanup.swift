import Foundation
import Locking
import Synchronization

/// Everything the harness leaves behind, undone when its owner goes away or, at the latest, when the
/// test process exits normally (an `atexit` handler). A folder with a server is removed once the
/// server has stopped (`SupervisedProcess.finish`); any other folder is removed at once.
enum ExitCleanup {
    private struct Entry {
        let folder: TemporaryFolder
        var server: SupervisedProcess?
    }

    private static let entries = Locked<[Int: Entry]>([:])
    private static let lastToken = Atomic<Int>(0)
    private static let exitHandler: Void = {
        _ = atexit { ExitCleanup.releaseAll() }
    }()

    /// Takes charge of `folder`; the token names it in the calls below.
    static func register(_ folder: TemporaryFolder) -> Int {
        _ = exitHandler  // installed on first use
        let token = lastToken.add(1, ordering: .relaxed).newValue
        entries.withLock { $0[token] = Entry(folder: folder) }
        return token
    }

    /// Records the server that now runs in the folder (nil once it stopped).
    static func setServer(_ server: SupervisedProcess?, for token: Int) {
        entries.withLock { $0[token]?.server = server }
    }

    /// Stops the folder's server, if one runs, and removes the folder.
    static func release(_ token: Int) {
        if let entry = entries.withLock({ $0.removeValue(forKey: token) }) {
            clean(entry)
        }
    }

    private static func releaseAll() {
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return Array(entries.values)
        }
        all.forEach(clean)
    }

    private static func clean(_ entry: Entry) {
        if let server = entry.server {
            server.finish()
        } else {
            entry.folder.remove()
        }
    }
}

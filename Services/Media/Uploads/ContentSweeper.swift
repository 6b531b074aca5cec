import Foundation
import Logging

/// Removes stored content no medium holds: a crash between a deletion's commit and its unlink
/// leaves the file, and so does an upload that expired after its content was stored but before
/// its medium was recorded. Run every `age` as a ``PeriodicJob``; only files at least `age` old
/// are looked at, and each is set aside and asked about again before it goes
/// (``MediaStorage/removeOrphan(sha256:lastWrittenBefore:stillUnheld:)``), so a finish storing
/// the same bytes meanwhile keeps them.
struct ContentSweeper: Sendable {
    let items: MediaStore
    let storage: any MediaStorage
    let age: Duration
    let logger: Logger

    /// Contents asked about per statement.
    static let batch = 1000

    func sweep() async {
        do {
            let cutoff = Date().addingTimeInterval(-age.timeInterval)
            let stored = try await storage.objects(lastWrittenBefore: cutoff)
            var removed = 0
            for start in stride(from: 0, to: stored.count, by: Self.batch) {
                let batch = Array(stored[start..<min(start + Self.batch, stored.count)])
                let held = try await items.held(among: batch)
                for sha256 in batch where !held.contains(sha256) {
                    let items = self.items
                    let gone = try await storage.removeOrphan(sha256: sha256, lastWrittenBefore: cutoff) {
                        try await items.held(among: [sha256]).isEmpty
                    }
                    if gone { removed += 1 }
                }
            }
            if removed > 0 { logger.info("removed stored content no medium holds", metadata: ["media.orphans_removed": "\(removed)"]) }
        } catch {
            logger.warning("sweeping stored content failed; retrying later", metadata: ["error": "\(error)"])
        }
    }
}

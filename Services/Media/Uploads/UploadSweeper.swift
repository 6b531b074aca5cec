import Foundation
import Logging

/// Removes unfinished uploads past their expiry (rows and parts), and parts no upload owns any
/// more (left by a crash between the two); run every `sweepInterval` as a ``PeriodicJob``.
struct UploadSweeper: Sendable {
    let uploads: UploadStore
    let storage: any MediaStorage
    let settings: MediaSettings
    let logger: Logger

    /// Expired uploads deleted per statement.
    static let batch = 500

    func sweep() async {
        do {
            var removed = 0
            while true {
                let expired = try await uploads.deleteExpired(limit: Self.batch)
                for id in expired { try await storage.removePart(upload: id) }
                removed += expired.count
                if expired.count < Self.batch { break }
            }
            // A part untouched for a while whose upload row is gone belongs to nobody.
            let quiet = min(settings.uploadLifetime.timeInterval, 600)
            let stale = try await storage.partUploads(lastWrittenBefore: Date().addingTimeInterval(-quiet))
            let open = try await uploads.existing(stale)
            for id in stale where !open.contains(id) { try await storage.removePart(upload: id) }
            removed += stale.count - open.count
            if removed > 0 { logger.info("removed expired uploads", metadata: ["media.uploads_removed": "\(removed)"]) }
        } catch {
            logger.warning("sweeping expired uploads failed; retrying later", metadata: ["error": "\(error)"])
        }
    }
}

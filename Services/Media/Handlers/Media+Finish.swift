import AviaryAPI
import ChannelSupport
import Crypto
import Foundation
import RPC

extension MediaService {
    @Sendable func finishUpload(_ params: UploadParams, _ context: RPCContext) async throws -> Media {
        let caller = try context.requireUser()
        // Finishing again returns what the first finish stored.
        if let finished = try await catalog.record(params.uploadId.value), finished.ownerID == caller {
            return media(finished)
        }
        let upload: UploadRecord
        do {
            upload = try await ownUpload(params.uploadId, context)
        } catch let error as RPCError where error.reason == "not_found" {
            // Finished by another finish of it since the look above?
            if let finished = try await catalog.record(params.uploadId.value), finished.ownerID == caller {
                return media(finished)
            }
            throw error
        }
        guard upload.received == upload.byteSize else {
            throw RPCError.conflict(
                "upload \(params.uploadId) is incomplete: \(upload.received) of \(upload.byteSize) bytes received; send the missing chunks",
                field: "uploadId")
        }
        let examined: PartExamination
        do {
            examined = try await storage.readPart(upload: upload.id, Self.examine)
        } catch let error as PosixError where error.code == ENOENT {
            return try await finishedMeanwhile(params.uploadId, caller: caller, context: context)
        }
        if let refusal = refusal(of: upload, examined) {
            try await discard(upload)
            throw refusal
        }
        // Noted before the part moves: a finish retried after a crash between the move and the
        // recording finds no part, and finishes from the content instead.
        try await uploads.markStored(upload.id, sha256: examined.sha256)
        do {
            try await storage.commitPart(upload: upload.id, sha256: examined.sha256)
        } catch let error as PosixError where error.code == ENOENT {
            return try await finishedMeanwhile(params.uploadId, caller: caller, context: context)
        }
        return try await record(upload, examined)
    }

    /// Records `upload`'s medium, whose content is stored.
    private func record(_ upload: UploadRecord, _ examined: PartExamination) async throws -> Media {
        var head = upload.head
        head.byteSize = examined.size
        let record = MediaRecord(
            head: head, sha256: examined.sha256, width: examined.facts?.width, height: examined.facts?.height,
            durationMs: examined.facts?.durationMs)
        try await items.finish(record)
        catalog.remember([record])
        return media(record)
    }

    /// The medium of an upload whose part is gone: moved to its content's name by another finish of
    /// it (a client retrying a finish it thought lost), whose medium appears once that finish
    /// commits (taking the upload's row away in the same transaction), or by a finish that crashed
    /// before it could record the medium, which this one then records. Waited for within the call's
    /// budget (5 s at most); no row and no medium: the upload expired or was discarded.
    private func finishedMeanwhile(_ id: EntityID, caller: Int64, context: RPCContext) async throws -> Media {
        let limit = ContinuousClock.now + .seconds(5)
        let deadline = context.deadline.map { min($0, limit) } ?? limit
        while true {
            // The row first: once it is gone, the medium committed with its deletion is visible.
            let open = try await uploads.find(id.value)
            if let record = try await catalog.record(id.value), record.ownerID == caller { return media(record) }
            guard let open else {
                throw RPCError.notFound("upload \(id) no longer exists: it expired or was discarded; begin a new one")
            }
            if let stored = open.storedSHA256, open.ownerID == caller {
                do {
                    let examined = try await storage.readObject(sha256: stored, Self.examine)
                    // Checked when it was stored; a stored file that no longer passes is not served.
                    if let refusal = refusal(of: open, examined) {
                        try await discard(open)
                        throw refusal
                    }
                    // The finish that moved it may have stopped before syncing its folder: its
                    // name must survive a power loss before a medium points at it.
                    try await storage.commitPart(upload: open.id, sha256: stored)
                    return try await record(open, examined)
                } catch let error as PosixError where error.code == ENOENT {
                    // Noted, but not moved yet: the finish that noted it is still at work.
                }
            }
            guard ContinuousClock.now + .milliseconds(100) < deadline else {
                throw RPCError.unavailable("upload \(id) is being finished by another call; retry shortly")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Why the examined part cannot become `upload`'s medium, if it cannot.
    private func refusal(of upload: UploadRecord, _ examined: PartExamination) -> RPCError? {
        let discarded = "; the upload was discarded, begin a new one"
        guard examined.size == upload.byteSize else {
            return RPCError.validation(
                "the stored file holds \(examined.size) bytes, not the declared \(upload.byteSize)\(discarded)", field: "byteSize")
        }
        if let declared = upload.declaredSHA256, declared != examined.sha256 {
            return RPCError.validation(
                "the file's SHA-256 is \(examined.sha256), not the declared \(declared)\(discarded)", field: "sha256")
        }
        guard let facts = examined.facts else {
            return RPCError.validation(
                "the file is not \(upload.type.rawValue): its first bytes match none of \(MediaType.listed)\(discarded)",
                field: "contentType")
        }
        guard facts.type == upload.type else {
            return RPCError.validation(
                "the file is \(facts.type.rawValue), not \(upload.type.rawValue) as declared\(discarded)", field: "contentType")
        }
        for (side, value) in [("wide", facts.width), ("high", facts.height)] {
            if let value, !(1...Self.largestSide).contains(value) {
                return RPCError.validation(
                    "the file's headers say it is \(value) pixels \(side); media accepts 1 to \(Self.largestSide)\(discarded)",
                    field: "contentType")
            }
        }
        return nil
    }

    /// The widest or highest picture accepted, in pixels: beyond any camera or screen, and within
    /// the 32-bit columns that store it.
    static let largestSide = 65_535

    private func discard(_ upload: UploadRecord) async throws {
        try await uploads.delete(upload.id)
        try await storage.removePart(upload: upload.id)
    }

    /// The size, hash and content facts of a whole part or stored content.
    @Sendable private static func examine(_ source: any ByteSource) throws -> PartExamination {
        PartExamination(size: source.size, sha256: try sha256(of: source), facts: try ContentFacts.inspect(source))
    }

    /// Hashes the whole source in 1 MiB reads.
    private static func sha256(of source: some ByteSource) throws -> String {
        var hasher = SHA256()
        var offset: Int64 = 0
        while offset < source.size {
            let piece = try source.read(at: offset, count: 1 << 20)
            guard !piece.isEmpty else { break }
            hasher.update(data: piece)
            offset += Int64(piece.count)
        }
        return hasher.finalize().hexEncoded
    }
}

/// What finishing learnt about a complete part.
struct PartExamination: Sendable {
    var size: Int64
    var sha256: String
    var facts: ContentFacts?
}

import Foundation
import NIOCore

/// Where media bytes live: the parts of unfinished uploads, and finished content under its
/// SHA-256 (identical files are stored once). The local filesystem implements it
/// (``LocalMediaStorage``); an object store can implement it later.
protocol MediaStorage: Sendable {
    /// Writes `bytes` into the part of `upload` at `offset`; writing the same chunk again is harmless.
    func writePart(upload: Int64, offset: Int64, bytes: Data) async throws

    /// Runs `body` (off the event loops) over the part of `upload`, to hash and inspect it.
    func readPart<T: Sendable>(upload: Int64, _ body: @escaping @Sendable (any ByteSource) throws -> T) async throws -> T

    /// Runs `body` (off the event loops) over content `sha256`, to inspect it.
    func readObject<T: Sendable>(sha256: String, _ body: @escaping @Sendable (any ByteSource) throws -> T) async throws -> T

    /// Makes the verified part of `upload` the durable content `sha256`: a crash leaves either
    /// no content or the whole of it under that name, never half of it. The part is gone afterwards.
    /// With content `sha256` stored already, only makes sure its name is durable.
    func commitPart(upload: Int64, sha256: String) async throws

    /// Removes content `sha256`, if it is there (no medium holds it any more).
    func removeObject(sha256: String) async throws

    /// Removes the part of `upload`, if there is one.
    func removePart(upload: Int64) async throws

    /// The uploads whose parts were last written before `date`, for the sweeper's orphan check.
    func partUploads(lastWrittenBefore date: Date) async throws -> [Int64]

    /// The content (its SHA-256) last written before `date`, for the content sweeper's orphan
    /// check. A finish that finds its content stored already writes the time anew.
    func objects(lastWrittenBefore date: Date) async throws -> [String]

    /// Removes content `sha256`, which no medium held when looked at, unless it was written since
    /// `date` (a finish met it meanwhile) or `stillUnheld`, asked once the content is set aside
    /// where no finish can meet it, says otherwise; true if it was removed.
    func removeOrphan(sha256: String, lastWrittenBefore date: Date, stillUnheld: @Sendable () async throws -> Bool) async throws -> Bool

    /// `count` bytes of content `sha256` from `offset` (fewer at its end).
    func read(sha256: String, offset: Int64, count: Int) async throws -> ByteBuffer
}

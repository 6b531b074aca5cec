import Foundation
import NIOCore
import NIOPosix

import Glibc

/// ``MediaStorage`` on a local folder (`AVIARY_MEDIA_ROOT`):
/// `parts/<uploadId>.part` holds an upload's chunks at their offsets (a sparse file until complete),
/// `objects/<2 hex>/<sha256>` holds finished content. A finished part is fsynced, then renamed
/// under its hash and the folder fsynced, so the final name only ever shows a whole file.
/// Every file call runs on a thread pool, never on an event loop.
struct LocalMediaStorage: MediaStorage {
    let root: String
    private let threadPool: NIOThreadPool

    private var parts: String { root + "/parts" }
    private var objects: String { root + "/objects" }

    /// Creates the folders if they are missing.
    init(root: String, threadPool: NIOThreadPool = .singleton) async throws {
        self.root = root
        self.threadPool = threadPool
        let folders = [root + "/parts", root + "/objects"]
        try await threadPool.runIfActive {
            for folder in folders {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
        }
    }

    func writePart(upload: Int64, offset: Int64, bytes: Data) async throws {
        let path = partPath(upload)
        try await threadPool.runIfActive {
            let file = try PosixFile.open(path, flags: O_WRONLY | O_CREAT, mode: 0o600)
            defer { file.close() }
            try bytes.withUnsafeBytes { try file.write($0, at: offset) }
        }
    }

    func readPart<T: Sendable>(upload: Int64, _ body: @escaping @Sendable (any ByteSource) throws -> T) async throws -> T {
        try await readWhole(partPath(upload), body)
    }

    func readObject<T: Sendable>(sha256: String, _ body: @escaping @Sendable (any ByteSource) throws -> T) async throws -> T {
        try await readWhole(objectPath(sha256), body)
    }

    private func readWhole<T: Sendable>(_ path: String, _ body: @escaping @Sendable (any ByteSource) throws -> T) async throws -> T {
        try await threadPool.runIfActive {
            let file = try PosixFile.open(path, flags: O_RDONLY)
            defer { file.close() }
            // The file does not change while it is read: its size once, not at every read.
            return try body(SizedSource(file))
        }
    }

    func commitPart(upload: Int64, sha256: String) async throws {
        let part = partPath(upload)
        let folder = "\(objects)/\(sha256.prefix(2))"
        let object = objectPath(sha256)
        try await threadPool.runIfActive {
            if access(object, F_OK) == 0 {
                // The same content is stored already: keep one copy. Its name may have been put
                // there a moment ago by a finish that has not made it durable yet: this one, whose
                // medium will point at it too, makes sure before it says so.
                unlink(part)
                try PosixFile.synchronizeFolder(folder)
                return
            }
            let file = try PosixFile.open(part, flags: O_WRONLY)
            defer { file.close() }
            try file.synchronize()
            if access(folder, F_OK) != 0 {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            // The folder's own name, in objects/, must survive a power loss too: whoever made it a
            // moment ago may not have synced it yet.
            try PosixFile.synchronizeFolder(objects)
            guard rename(part, object) == 0 else { throw PosixError(operation: "rename", path: part) }
            try PosixFile.synchronizeFolder(folder)
        }
    }

    func removeObject(sha256: String) async throws {
        let path = objectPath(sha256)
        try await threadPool.runIfActive {
            guard unlink(path) == 0 || errno == ENOENT else { throw PosixError(operation: "unlink", path: path) }
        }
    }

    func removePart(upload: Int64) async throws {
        let path = partPath(upload)
        try await threadPool.runIfActive {
            guard unlink(path) == 0 || errno == ENOENT else { throw PosixError(operation: "unlink", path: path) }
        }
    }

    func partUploads(lastWrittenBefore date: Date) async throws -> [Int64] {
        let folder = parts
        return try await threadPool.runIfActive {
            try FileManager.default.contentsOfDirectory(atPath: folder).compactMap { name -> Int64? in
                guard name.hasSuffix(".part"), let id = Int64(name.dropLast(5)) else { return nil }
                let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)
                guard let modified = attributes?[.modificationDate] as? Date, modified < date else { return nil }
                return id
            }
        }
    }

    func read(sha256: String, offset: Int64, count: Int) async throws -> ByteBuffer {
        let path = objectPath(sha256)
        return try await threadPool.runIfActive {
            let file = try PosixFile.open(path, flags: O_RDONLY)
            defer { file.close() }
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            _ = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: target.prefix(count)), at: offset)
            }
            return buffer
        }
    }

    private func partPath(_ upload: Int64) -> String {
        parts + "/\(upload).part"
    }

    private func objectPath(_ sha256: String) -> String {
        "\(objects)/\(sha256.prefix(2))/\(sha256)"
    }
}

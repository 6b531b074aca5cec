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
            if utimensat(AT_FDCWD, object, nil, 0) == 0 {
                // The same content is stored already: keep one copy. Its name may have been put
                // there a moment ago by a finish that has not made it durable yet: this one, whose
                // medium will point at it too, makes sure before it says so. Its time is written
                // anew, which keeps the content sweeper from taking it (removeOrphan).
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

    func objects(lastWrittenBefore date: Date) async throws -> [String] {
        let objects = self.objects
        return try await threadPool.runIfActive {
            let files = FileManager.default
            return try files.contentsOfDirectory(atPath: objects).flatMap { folder -> [String] in
                let path = objects + "/" + folder
                // Content a sweep set aside and did not get to (it stopped there) is put back,
                // and looked at again as any.
                for name in (try? files.contentsOfDirectory(atPath: path)) ?? [] where name.hasSuffix(".orphan") {
                    _ = rename(path + "/" + name, path + "/" + name.dropLast(7))
                }
                let names = (try? files.contentsOfDirectory(atPath: path)) ?? []
                return names.filter { name in
                    guard name.count == 64, name.hasPrefix(folder) else { return false }
                    return Self.modified(objects + "/" + folder + "/" + name).map { $0 < date } ?? false
                }
            }
        }
    }

    func removeOrphan(sha256: String, lastWrittenBefore date: Date, stillUnheld: @Sendable () async throws -> Bool) async throws -> Bool {
        let object = objectPath(sha256)
        let aside = object + ".orphan"
        // Renamed first: a finish that comes now finds no content, and stores its own copy.
        let setAside = try await threadPool.runIfActive {
            guard rename(object, aside) == 0 else {
                guard errno == ENOENT else { throw PosixError(operation: "rename", path: object) }
                return false
            }
            return true
        }
        guard setAside else { return false }
        var remove = false
        do {
            // Written since it was listed: a finish met it, and its medium is being recorded.
            remove = try await threadPool.runIfActive { Self.modified(aside).map { $0 < date } ?? false }
            if remove { remove = try await stillUnheld() }
        } catch {
            try await putBack(aside, as: object)
            throw error
        }
        if remove {
            try await threadPool.runIfActive {
                guard unlink(aside) == 0 || errno == ENOENT else { throw PosixError(operation: "unlink", path: aside) }
            }
        } else {
            // A finish may have stored the same bytes under the name meanwhile: either copy will do.
            try await putBack(aside, as: object)
        }
        return remove
    }

    private func putBack(_ aside: String, as object: String) async throws {
        try await threadPool.runIfActive {
            guard rename(aside, object) == 0 else { throw PosixError(operation: "rename", path: aside) }
        }
    }

    /// When `path` was last written; nil when it is not there.
    private static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
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

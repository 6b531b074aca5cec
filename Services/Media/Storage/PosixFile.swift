import Glibc

/// An open file descriptor with the few blocking calls storage needs. Used on one thread-pool
/// thread at a time and closed there, so it needs no locking.
struct PosixFile: ByteSource {
    let descriptor: Int32
    let path: String

    static func open(_ path: String, flags: Int32, mode: mode_t = 0) throws -> PosixFile {
        let descriptor = Glibc.open(path, flags | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw PosixError(operation: "open", path: path) }
        return PosixFile(descriptor: descriptor, path: path)
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// The file's length (0 if it cannot be told); reads use `pread`, so the position does not matter.
    var size: Int64 {
        max(0, Int64(lseek(descriptor, 0, SEEK_END)))
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw PosixError(operation: "write", path: path) }
            done += written
        }
    }

    /// Fills `target` from `offset` as far as the file goes; returns how many bytes were read.
    func read(into target: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < target.count {
            let read = pread(descriptor, target.baseAddress! + done, target.count - done, off_t(offset) + off_t(done))
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else { throw PosixError(operation: "read", path: path) }
            if read == 0 { break }
            done += read
        }
        return done
    }

    func read(at offset: Int64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { try self.read(into: $0, at: offset) }
        return Array(bytes.prefix(read))
    }

    func synchronize() throws {
        guard fsync(descriptor) == 0 else { throw PosixError(operation: "fsync", path: path) }
    }

    /// Makes a rename into `folder` durable.
    static func synchronizeFolder(_ folder: String) throws {
        let file = try open(folder, flags: O_RDONLY | O_DIRECTORY)
        defer { file.close() }
        try file.synchronize()
    }
}

/// A failed file call: which call, on which file, and the system's reason.
struct PosixError: Error, CustomStringConvertible {
    var operation: String
    var path: String
    var code: Int32

    init(operation: String, path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

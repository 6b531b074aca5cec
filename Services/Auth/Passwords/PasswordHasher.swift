import CArgon2
import Foundation
import Metrics
import NIOPosix
import RPC
import Synchronization

/// Argon2id password hashing through libargon2. Hashing is deliberately slow and memory-hard, so it
/// runs on threads of its own (never on the cooperative pool or an event loop), as many as there
/// are cores by default: that bounds both the CPU and the memory (19 MiB per hash) it can take.
/// Calls beyond a queue of `maxQueued` are refused as `unavailable` rather than left to pile up.
final class PasswordHasher: Sendable {
    let parameters: Argon2Parameters
    private let threadPool: NIOThreadPool
    private let maxQueued: Int
    private let pending = Atomic<Int>(0)
    /// `auth_password_hash_seconds{operation="hash"|"verify"}`: the time of the hash itself, without
    /// the wait for a thread, so the cost of the parameters can be told apart from the queue (on a
    /// busy machine it still includes time the hash, at its lower priority, waited for a core).
    private let hashTimer = Metrics.Timer(label: "auth_password_hash_seconds", dimensions: [("operation", "hash")])
    private let verifyTimer = Metrics.Timer(label: "auth_password_hash_seconds", dimensions: [("operation", "verify")])

    init(parameters: Argon2Parameters = Argon2Parameters(), threads: Int, maxQueued: Int) {
        self.parameters = parameters
        self.maxQueued = maxQueued
        threadPool = NIOThreadPool(numberOfThreads: max(1, threads))
        threadPool.start()
    }

    deinit {
        threadPool.shutdownGracefully { _ in }
    }

    /// The encoded hash of `password` with a fresh random salt: `$argon2id$v=19$m=…,t=…,p=…$salt$hash`.
    func hash(_ password: String) async throws -> String {
        let parameters = self.parameters
        let bytes = Self.bytes(of: password)
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<parameters.saltBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let timer = hashTimer
        return try await run {
            let started = ContinuousClock.now
            defer { timer.record(duration: ContinuousClock.now - started) }
            let length = argon2_encodedlen(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism, UInt32(parameters.saltBytes),
                UInt32(parameters.hashBytes), Argon2_id)
            var encoded = [CChar](repeating: 0, count: length + 1)
            let status = argon2id_hash_encoded(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism, bytes, bytes.count, salt, salt.count,
                parameters.hashBytes, &encoded, encoded.count)
            guard status == ARGON2_OK.rawValue else { throw PasswordHashError(status: status) }
            return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Whether `password` matches `encoded`; libargon2 compares the hashes in constant time.
    /// A stored value that is not an Argon2 hash matches nothing.
    func verify(_ password: String, against encoded: String) async throws -> Bool {
        let bytes = Self.bytes(of: password)
        let type: argon2_type
        switch encoded.split(separator: "$", maxSplits: 1).first {
        case "argon2id": type = Argon2_id
        case "argon2i": type = Argon2_i
        case "argon2d": type = Argon2_d
        default: return false
        }
        let timer = verifyTimer
        return try await run {
            let started = ContinuousClock.now
            defer { timer.record(duration: ContinuousClock.now - started) }
            let status = argon2_verify(encoded, bytes, bytes.count, type)
            switch status {
            case ARGON2_OK.rawValue: return true
            case ARGON2_VERIFY_MISMATCH.rawValue, ARGON2_DECODING_FAIL.rawValue: return false
            default: throw PasswordHashError(status: status)
            }
        }
    }

    /// Whether `encoded` was made with less than the current parameters (or another algorithm).
    func needsRehash(_ encoded: String) -> Bool {
        guard let stored = Argon2Parameters(encoded: encoded) else { return true }
        return stored.isWeaker(than: parameters)
    }

    /// Passwords are compared as NFC, so the same password typed on systems that compose accents
    /// differently still matches.
    private static func bytes(of password: String) -> [UInt8] {
        Array(password.precomposedStringWithCanonicalMapping.utf8)
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let queued = pending.wrappingAdd(1, ordering: .relaxed).newValue
        defer { pending.wrappingSubtract(1, ordering: .relaxed) }
        guard queued <= maxQueued else {
            throw RPCError.unavailable("too many sign-ins are being checked right now; retry shortly")
        }
        return try await threadPool.runIfActive {
            Self.yieldToCalls()
            return try body()
        }
    }

    /// Lowers the calling hash thread's priority (nice 10; idempotent). Hashing is batch work: a
    /// call's event loop woken while a hash runs then gets the core at once, instead of waiting out
    /// the hash's time slice, and under load hashes take the CPU the calls leave. (On Linux the nice
    /// value is per thread, and `who` 0 is the calling thread.)
    private static func yieldToCalls() {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
    }
}

/// libargon2 refused to hash (out of memory, bad parameters): an internal error, never shown to clients.
struct PasswordHashError: Error, CustomStringConvertible {
    let status: Int32

    var description: String { "argon2 failed: \(String(cString: argon2_error_message(status)))" }
}

import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport

/// The suite's stack, started once: real `aviary-auth` and `aviary-media` on a fresh database
/// and Redis database 12, media storing under a temporary folder with 4 KiB chunks (so small files
/// take several), and the messaging stand-in answering `messaging.isMember`.
final class MediaStack: Sendable {
    let stack: ServiceStack
    let messaging: MessagingStandIn
    /// `AVIARY_MEDIA_ROOT` of the stack's media service.
    let root: String
    static let chunkBytes = 4096

    private init(stack: ServiceStack, messaging: MessagingStandIn, root: String) {
        self.stack = stack
        self.messaging = messaging
        self.root = root
    }

    private static let started = Task { try await MediaStack.start() }

    static func shared() async throws -> MediaStack {
        try await started.value
    }

    private static func start() async throws -> MediaStack {
        let messaging = try await MessagingStandIn.start()
        let root = try temporaryFolderForThisRun("media-tests")
        let stack = try await ServiceStack.start(
            ["auth", "media"], redisDatabase: 12,
            environment: [
                "AVIARY_MEDIA_ROOT": root, "AVIARY_MEDIA_CHUNK_BYTES": String(chunkBytes),
                "AVIARY_MESSAGING_ADDRESSES": messaging.address, "AVIARY_MEDIA_URL_LIFETIME_SECONDS": "600",
            ])
        messaging.accept(serviceCredential: stack.serviceCredential)
        return MediaStack(stack: stack, messaging: messaging, root: root)
    }

    var adminPort: Int { stack.process("media").adminPort }

    /// The part files present, by upload id.
    func partFiles() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: root + "/parts"))
    }

    /// Every stored object's name (its SHA-256).
    func objectFiles() throws -> [String] {
        let objects = root + "/objects"
        return try FileManager.default.contentsOfDirectory(atPath: objects).flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: objects + "/" + folder)
        }
    }

    struct Started: Decodable, Sendable {
        var uploadId: String
        var chunkBytes: Int
    }

    struct Received: Decodable {
        var received: Int64
    }

    func begin(
        _ user: StackUser, _ bytes: [UInt8], type: String, purpose: String = "tweet", conversation: Int64? = nil,
        sha256: String? = nil, on client: RPCClient? = nil
    ) async throws -> Started {
        var params: [String: JSONValue] = [
            "contentType": .string(type), "byteSize": .int(Int64(bytes.count)), "purpose": .string(purpose),
        ]
        if let conversation { params["conversationId"] = .string(String(conversation)) }
        if let sha256 { params["sha256"] = .string(sha256) }
        return try await (client ?? stack.client("media")).call(
            "media.beginUpload", params: params, meta: RequestMeta(token: user.token), as: Started.self)
    }

    /// Sends chunk `index` of `bytes` (chunks of `chunkBytes`).
    @discardableResult
    func sendChunk(
        _ user: StackUser, upload: String, _ bytes: [UInt8], index: Int, on client: RPCClient? = nil
    ) async throws -> Int64 {
        let start = index * Self.chunkBytes
        let piece = bytes[start..<min(bytes.count, start + Self.chunkBytes)]
        return try await (client ?? stack.client("media")).call(
            "media.uploadChunk",
            params: ["uploadId": JSONValue.string(upload), "offset": .int(Int64(start)), "data": .string(Data(piece).base64EncodedString())],
            meta: RequestMeta(token: user.token), as: Received.self
        ).received
    }

    func finish(_ user: StackUser, upload: String, on client: RPCClient? = nil) async throws -> Media {
        try await (client ?? stack.client("media")).call(
            "media.finishUpload", params: ["uploadId": JSONValue.string(upload)], meta: RequestMeta(token: user.token),
            as: Media.self)
    }

    /// Begins, sends every chunk (last first, to show order does not matter) and finishes.
    func upload(
        _ user: StackUser, _ bytes: [UInt8], type: String, purpose: String = "tweet", conversation: Int64? = nil
    ) async throws -> Media {
        let started = try await begin(user, bytes, type: type, purpose: purpose, conversation: conversation)
        let chunks = (bytes.count + Self.chunkBytes - 1) / Self.chunkBytes
        for index in (0..<chunks).reversed() { try await sendChunk(user, upload: started.uploadId, bytes, index: index) }
        return try await finish(user, upload: started.uploadId)
    }

    /// The path and query of a media URL, for the HTTP probe.
    static func target(of url: String) -> String {
        guard let range = url.range(of: "/media/") else { return url }
        return String(url[range.lowerBound...])
    }
}

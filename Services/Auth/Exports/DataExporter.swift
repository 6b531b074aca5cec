import AuthTokens
import AviaryAPI
import AviaryJSON
import ChannelSupport
import Crypto
import Foundation
import Logging
import NIOPosix
import RPC
import ServiceKit
import ZIPFoundation

/// Prepares data exports (``DataExportStore``), one at a time per instance, every second: it
/// starts a session of the export's user and reads, as them, what the public methods show them
/// of their own data, page after page (so an export holds exactly what the API would give them);
/// puts it in a ZIP with the media files those show; uploads that to media as a private `export`
/// medium (begun by the internal `media.beginExportUpload`, sent and finished as the user); and
/// ends the session.
/// A failed attempt is tried again, three times in all.
struct DataExporter: Sendable {
    let store: DataExportStore
    let issuer: SessionIssuer
    let sessions: SessionStore
    let resources: ServiceResources
    let logger: Logger

    /// Pages of at most this many items are read.
    static let pageSize = PageLimit(PageLimit.maximum)
    /// The most items of one list an export holds.
    static let itemLimit = 100_000

    func prepareNext() async {
        let claimed: DataExportStore.Row?
        do {
            claimed = try await store.claim()
        } catch {
            logger.warning("reading the exports to prepare failed; retrying", metadata: ["error": "\(error)"])
            return
        }
        guard let export = claimed else { return }
        var session: IssuedTokens?
        do {
            guard let started = try await issuer.start(userID: export.userID) else {
                throw ExportError("the account is suspended or deleted")
            }
            session = started
            let archive = try await build(for: export.userID, token: started.accessToken)
            let media = try await upload(archive, for: export.userID, token: started.accessToken)
            try await store.ready(export.id, media: media, byteSize: Int64(archive.count))
            logger.info("data export ready", metadata: ["export.id": "\(export.id)", "export.bytes": "\(archive.count)"])
        } catch {
            logger.warning("preparing a data export failed", metadata: ["export.id": "\(export.id)", "error": "\(error)"])
            try? await store.failed(export.id, error: "\(error)")
        }
        if let session {
            _ = try? await sessions.revoke(sessionID: session.sessionID, userID: export.userID)
            try? await resources.sessionRevocations.revoke(sessionIDs: [session.sessionID])
        }
    }

    /// The ZIP of `user`'s data, read as them.
    private func build(for user: Int64, token: String) async throws -> Data {
        let caller = Caller(resources: resources, token: token)
        var files: [(path: String, bytes: Data)] = []
        func add(_ path: String, _ value: some Encodable) throws {
            files.append((path, Data(try WireEncoding.encode(value))))
        }
        let me: User = try await caller.call(AccountAPI.me, Empty())
        try add("profile.json", me)
        let id = EntityID(user)
        let tweets = try await caller.all { try await caller.call(TweetsAPI.byUser, ByUserParams(userId: id, limit: Self.pageSize, cursor: $0, includeReplies: true)) }
        try add("tweets.json", tweets)
        try add("likes.json", try await caller.all { try await caller.call(TweetsAPI.likedBy, UserPageParams(userId: id, limit: Self.pageSize, cursor: $0)) })
        try add("bookmarks.json", try await caller.all { try await caller.call(TweetsAPI.bookmarks, PageParams(limit: Self.pageSize, cursor: $0)) })
        try add("followers.json", try await caller.all { try await caller.call(GraphAPI.followers, UserPageParams(userId: id, limit: Self.pageSize, cursor: $0)) })
        try add("following.json", try await caller.all { try await caller.call(GraphAPI.following, UserPageParams(userId: id, limit: Self.pageSize, cursor: $0)) })
        let conversations = try await caller.all { try await caller.call(MessagingAPI.conversations, PageParams(limit: Self.pageSize, cursor: $0)) }
        try add("conversations.json", conversations)
        var media: [Media] = []
        for conversation in conversations {
            let messages = try await caller.all {
                try await caller.call(MessagingAPI.history, HistoryParams(conversationId: conversation.id, limit: Self.pageSize, cursor: $0, order: .oldest))
            }
            try add("messages/\(conversation.id).json", messages)
            media += messages.compactMap { $0.sender.id == id ? $0.media : nil }
        }
        // The files of their own media: what their tweets and messages show.
        media += tweets.filter { $0.repostId == nil }.flatMap(\.media)
        var seen = Set<EntityID>()
        for medium in media where seen.insert(medium.id).inserted {
            files.append(("media/\(medium.id).\(Self.fileExtension(medium.contentType))", try await caller.bytes(of: medium)))
        }
        let contents = files
        return try await NIOThreadPool.singleton.runIfActive { try Self.zip(contents) }
    }

    /// `files` as a ZIP archive, deflated.
    private static func zip(_ files: [(path: String, bytes: Data)]) throws -> Data {
        let archive = try Archive(data: Data(), accessMode: .create)
        for file in files {
            try archive.addEntry(
                with: "aviary-export/\(file.path)", type: .file, uncompressedSize: Int64(file.bytes.count),
                compressionMethod: file.path.hasPrefix("media/") ? .none : .deflate
            ) { position, size in
                file.bytes.subdata(in: Int(position)..<Int(position) + size)
            }
        }
        guard let data = archive.data else { throw ExportError("the archive could not be written") }
        return data
    }

    private static func fileExtension(_ contentType: String) -> String {
        switch contentType {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "image/webp": "webp"
        case "video/mp4": "mp4"
        case "video/quicktime": "mov"
        default: "bin"
        }
    }

    /// Uploads `archive` to media as the user's export, in the chunks media asks for.
    private func upload(_ archive: Data, for user: Int64, token: String) async throws -> Int64 {
        let caller = Caller(resources: resources, token: token)
        let started = try await resources.peers.media.beginExportUpload(
            BeginExportUploadParams(
                ownerId: EntityID(user), byteSize: Int64(archive.count),
                sha256: SHA256Hex(SHA256.hash(data: archive).hexEncoded)),
            context: nil)
        var offset = 0
        while offset < archive.count {
            let end = min(offset + started.chunkBytes, archive.count)
            _ = try await caller.call(
                MediaAPI.uploadChunk,
                UploadChunkParams(uploadId: started.uploadId, offset: Int64(offset), data: Base64Bytes(archive.subdata(in: offset..<end))))
            offset = end
        }
        return try await caller.call(MediaAPI.finishUpload, UploadParams(uploadId: started.uploadId)).id.value
    }
}

/// Calls of other services as the export's user.
private struct Caller: Sendable {
    let resources: ServiceResources
    let token: String

    func call<Params, Result>(_ method: RPCMethod<Params, Result>, _ params: Params) async throws -> Result {
        try await resources.client(for: method.service).call(
            method.name, params: params, meta: RequestMeta(token: token), idempotent: true, as: Result.self)
    }

    /// Every item of a paged list, page after page, up to ``DataExporter/itemLimit``.
    func all<Item>(_ page: (String?) async throws -> Page<Item>) async throws -> [Item] {
        var items: [Item] = []
        var cursor: String?
        repeat {
            let next = try await page(cursor)
            items += next.items
            cursor = next.nextCursor
        } while cursor != nil && items.count < DataExporter.itemLimit
        return items
    }

    /// The bytes of `medium`, read through `media.read` as the user.
    func bytes(of medium: Media) async throws -> Data {
        var data = Data()
        while true {
            let piece = try await call(MediaAPI.read, ReadParams(mediaId: medium.id, offset: Int64(data.count), length: 512 * 1024))
            guard let bytes = Data(base64Encoded: piece.data), !bytes.isEmpty else { return data }
            data.append(bytes)
            if Int64(data.count) >= medium.byteSize { return data }
        }
    }
}

/// An export that cannot be prepared.
struct ExportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import RPC
import ServiceKit

extension GatewayService {
    /// `POST /media`: the file as the body, streamed into media's upload methods chunk by chunk;
    /// `GET /media/{id}`: sent on to the media service, which serves the bytes (Range, ETag, signed
    /// private URLs) from `AVIARY_MEDIA_PUBLIC_URL`, so that files never pass through the gateway.
    func addMediaRoutes(to router: Router<EdgeContext>) {
        router.post("media") { request, context in
            // Off the connection's loop: a multipart body is written to a file and read back.
            try await withTaskExecutorPreference(globalConcurrentExecutor) { try await self.upload(request, context: context) }
        }
        router.get("media/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard !id.isEmpty, id.utf8.count <= 20, id.utf8.allSatisfy({ (48...57).contains($0) }) else {
                return EdgeResponses.failure(.notFound, "no medium has the id '\(id.prefix(40))'")
            }
            var location = "\(self.settings.mediaPublicURL)/media/\(id)"
            if let query = request.uri.query, !query.isEmpty { location += "?" + query }
            return Response(status: .temporaryRedirect, headers: [.location: location])
        }
    }

    /// `media.beginUpload`'s params as the client gave them (content type, purpose, conversation),
    /// unparsed: media checks them and names the field it refuses.
    struct BeginUpload: Encodable {
        var contentType: String
        var byteSize: Int64
        var purpose: String
        var conversationId: String?
    }

    private func upload(_ request: Request, context: EdgeContext) async throws -> Response {
        let caller = caller(of: request, peer: context.peer)
        guard caller.token != nil else {
            return EdgeResponses.failure(.unauthenticated("an upload needs an access token in Authorization: Bearer …"))
        }
        let outcome = await limits.take(address: caller.address, user: await user(of: caller.token), cost: 1)
        if let outcome, !outcome.allowed {
            return EdgeResponses.failure(EdgeLimits.refusal(outcome), headers: EdgeResponses.limitHeaders(outcome))
        }
        guard let purpose = request.uri.queryParameters["purpose"].map(String.init), !purpose.isEmpty else {
            return EdgeResponses.failure(
                .validation("the query parameter purpose is required: avatar, tweet or message", field: "purpose"))
        }
        let conversationId = request.uri.queryParameters["conversationId"].map(String.init)
        let header = request.headers[.contentType] ?? ""
        let contentType = MediaUpload.mediaType(header)
        if contentType == "multipart/form-data" {
            let spooled: MediaUpload.SpooledFile
            switch await MediaUpload.spoolFilePart(of: request, contentType: header, limit: settings.maxUploadBytes) {
            case .failure(let refusal): return refusal.response
            case .success(let file): spooled = file
            }
            defer { try? FileManager.default.removeItem(at: spooled.url) }
            let begin = BeginUpload(contentType: spooled.contentType, byteSize: spooled.byteSize, purpose: purpose, conversationId: conversationId)
            return try await store(begin, from: MediaUpload.FileChunks(url: spooled.url), for: caller).response
        }
        guard !contentType.isEmpty else {
            return EdgeResponses.failure(
                .unsupportedMediaType,
                "send the file as the body with its type in Content-Type (image/jpeg, video/mp4, …), or as multipart/form-data with a part named file")
        }
        guard let length = request.headers[.contentLength].flatMap({ Int64($0) }) else {
            return EdgeResponses.failure(.lengthRequired, "an upload needs Content-Length: the media service is told the size first")
        }
        guard length <= settings.maxUploadBytes else {
            return EdgeResponses.failure(.contentTooLarge, "an upload is at most \(settings.maxUploadBytes) bytes")
        }
        let begin = BeginUpload(contentType: contentType, byteSize: length, purpose: purpose, conversationId: conversationId)
        return try await store(begin, from: request.body, for: caller).response
    }

    /// How an upload ended: the stored Media, or why not.
    enum UploadOutcome {
        case stored(RawJSON)
        /// The media service refused it.
        case refused(RPCError)
        /// The body was not what it said.
        case malformed(HTTPResponse.Status, String)

        /// The answer of `POST /media`: the Media (201), or the refusal.
        var response: Response {
            switch self {
            case .stored(let media): EdgeResponses.json(Data(media.bytes), status: .created)
            case .refused(let error): EdgeResponses.failure(error)
            case .malformed(let status, let message): EdgeResponses.failure(status, message)
            }
        }
    }

    /// Begins the upload, sends `bytes` in the chunks media asks for, one after another, and
    /// finishes it: the stored Media, or the first refusal.
    func store(
        _ begin: BeginUpload, from bytes: some AsyncSequence<ByteBuffer, any Error>, for caller: EdgeCaller
    ) async throws -> UploadOutcome {
        let started: UploadStarted
        switch await forwarder.call(.media, MediaAPI.beginUpload.name, params: try RawJSON(encoding: begin), for: caller) {
        case .failure(let error): return .refused(error)
        case .success(let raw): started = try raw.decode(UploadStarted.self)
        }
        let chunkBytes = max(1, started.chunkBytes)
        var pending = ByteBuffer()
        var offset: Int64 = 0
        func send(_ bytes: ByteBuffer) async -> RPCError? {
            let chunk = UploadChunkParams(uploadId: started.uploadId, offset: offset, data: Base64Bytes(Data(buffer: bytes)))
            offset += Int64(bytes.readableBytes)
            guard let params = try? RawJSON(encoding: chunk) else { return .internalError() }
            if case .failure(let error) = await forwarder.call(.media, MediaAPI.uploadChunk.name, params: params, for: caller) {
                return error
            }
            return nil
        }
        for try await part in bytes {
            pending.writeImmutableBuffer(part)
            guard Int64(pending.readableBytes) + offset <= begin.byteSize else {
                return .malformed(.contentTooLarge, "the body is longer than its Content-Length")
            }
            while pending.readableBytes >= chunkBytes {
                let chunk = pending.readSlice(length: chunkBytes)!
                if let error = await send(chunk) { return .refused(error) }
            }
            pending.discardReadBytes()
        }
        if pending.readableBytes > 0, let error = await send(pending) { return .refused(error) }
        guard offset == begin.byteSize else {
            return .malformed(.badRequest, "the body ended after \(offset) of its \(begin.byteSize) bytes")
        }
        let finish = try RawJSON(encoding: UploadParams(uploadId: started.uploadId))
        switch await forwarder.call(.media, MediaAPI.finishUpload.name, params: finish, for: caller) {
        case .failure(let error): return .refused(error)
        case .success(let media): return .stored(media)
        }
    }
}

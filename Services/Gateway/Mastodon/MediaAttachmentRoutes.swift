import AviaryAPI
import AviaryJSON
import Foundation
import Hummingbird

/// `POST /api/v2/media` (and v1): a `multipart/form-data` upload through the gateway's own upload
/// path into the media service, as a tweet's medium; `GET /api/v1/media/:id`.
extension MastodonAPI {
    func addMediaRoutes(to router: Router<EdgeContext>) {
        for path in ["api/v2/media", "api/v1/media"] {
            endpoint(router, .post, RouterPath(path), access: .user, scope: "write:media") { call, _ in
                // Off the connection's loop: the file part is written to a file and read back.
                try await withTaskExecutorPreference(globalConcurrentExecutor) { try await upload(call) }
            }
        }
        endpoint(router, .get, "api/v1/media/:id", access: .user, scope: "write:media") { call, context in
            let media = try await self.call(MediaAPI.get, MediaParams(mediaId: try call.pathID(context)), call)
            return EdgeResponses.json(call.renderer.media(media))
        }
        endpoint(router, .put, "api/v1/media/:id", access: .user, scope: "write:media") { call, context in
            // Aviary keeps no description or focal point: the attachment is answered as it is.
            let media = try await self.call(MediaAPI.get, MediaParams(mediaId: try call.pathID(context)), call)
            return EdgeResponses.json(call.renderer.media(media))
        }
    }

    private func upload(_ call: Call) async throws -> Response {
        let header = call.request.headers[.contentType] ?? ""
        guard MediaUpload.mediaType(header) == "multipart/form-data" else {
            throw MastodonError.validation("file", "must be sent as multipart/form-data")
        }
        let spooled: MediaUpload.SpooledFile
        switch await MediaUpload.spoolFilePart(of: call.request, contentType: header, limit: gateway.settings.maxUploadBytes) {
        case .failure(let refusal): return refusal.response
        case .success(let file): spooled = file
        }
        defer { try? FileManager.default.removeItem(at: spooled.url) }
        let begin = GatewayService.BeginUpload(
            contentType: spooled.contentType, byteSize: spooled.byteSize, purpose: MediaPurpose.tweet.rawValue, conversationId: nil)
        return EdgeResponses.json(call.renderer.media(try await store(begin, from: spooled, call)))
    }

    /// Uploads a spooled file through the gateway's upload path, for the caller: the Media.
    func store(_ begin: GatewayService.BeginUpload, from file: MediaUpload.SpooledFile, _ call: Call) async throws -> Media {
        switch try await gateway.store(begin, from: MediaUpload.FileChunks(url: file.url), for: call.caller) {
        case .stored(let raw): return try raw.decode(Media.self)
        case .refused(let error): throw MastodonError(error)
        case .malformed(let status, let message): throw MastodonError(status: status, message: message)
        }
    }
}

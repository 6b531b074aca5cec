import AviaryAPI
import AviaryJSON
import Foundation
import Hummingbird

/// `POST /api/v2/media` (and v1): a `multipart/form-data` upload through the gateway's own upload
/// path into the media service, as a tweet's medium, with its `description` and `focus` fields;
/// `GET /api/v1/media/:id`; `PUT /api/v1/media/:id` (description, focus: `media.describe`).
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
            let id = try call.pathID(context)
            let described = try await describe(id, description: call.params["description"], focus: call.params["focus"], call)
            if let described { return EdgeResponses.json(call.renderer.media(described)) }
            return EdgeResponses.json(call.renderer.media(try await self.call(MediaAPI.get, MediaParams(mediaId: id), call)))
        }
    }

    private func upload(_ call: Call) async throws -> Response {
        let header = call.request.headers[.contentType] ?? ""
        guard MediaUpload.mediaType(header) == "multipart/form-data" else {
            throw MastodonError.validation("file", "must be sent as multipart/form-data")
        }
        let form: MediaUpload.MultipartForm
        switch await MediaUpload.readMultipart(
            of: call.request, contentType: header, limit: gateway.settings.maxUploadBytes, filePart: "file")
        {
        case .failure(let refusal): return refusal.response
        case .success(let read): form = read
        }
        guard let spooled = form.file else { throw MastodonError.validation("file", "must be a complete part of the form") }
        defer { try? FileManager.default.removeItem(at: spooled.url) }
        func field(_ name: String) -> String? { form.fields.first { $0.name == name }?.value }
        let begin = GatewayService.BeginUpload(
            contentType: spooled.contentType, byteSize: spooled.byteSize, purpose: MediaPurpose.tweet.rawValue, conversationId: nil)
        let media = try await store(begin, from: spooled, call)
        let described = try await describe(media.id, description: field("description"), focus: field("focus"), call)
        return EdgeResponses.json(call.renderer.media(described ?? media))
    }

    /// Sets what Mastodon's `description` and `focus` (`"x,y"`) give of a medium; nil when neither is given.
    private func describe(_ id: EntityID, description: String?, focus: String?, _ call: Call) async throws -> Media? {
        guard description != nil || focus != nil else { return nil }
        var params = DescribeMediaParams(mediaId: id)
        if let description { params.description = .some(description) }
        if let focus {
            let parts = focus.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2 else { throw MastodonError.validation("focus", "must be two numbers x,y from -1 to 1") }
            params.focus = .some(MediaFocus(x: parts[0], y: parts[1]))
        }
        return try await self.call(MediaAPI.describe, params, call)
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

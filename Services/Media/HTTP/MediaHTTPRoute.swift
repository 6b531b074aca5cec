import AviaryAPI
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceKit

/// `GET` and `HEAD /media/{id}` on the admin HTTP port: the bytes of a finished medium with
/// `Content-Type`, `Content-Length`, a strong `ETag` (its SHA-256), `If-None-Match` (304),
/// single `Range`s (206, 416; `If-Range` honoured) and cache headers: a year for public media,
/// private and no longer than the signature for message media, which needs a valid `exp`/`sig`
/// (without one it is not found, like an id that does not exist). A data export (purpose `export`)
/// is served once: its `GET` takes it, whole, and it is gone afterwards.
struct MediaHTTPRoute: Sendable {
    let media: MediaService

    /// The file is read and sent in pieces of this size, each as the client takes the one before.
    static let pieceBytes = 256 * 1024
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    func add(to router: Router<BasicRequestContext>) {
        router.get("/media/{id}") { request, context in
            try await respond(to: request, id: context.parameters.get("id") ?? "", logger: context.logger)
        }
    }

    func respond(to request: Request, id idText: String, logger: Logger) async throws -> Response {
        guard let id = EntityID(idText) else {
            return Self.text("bad request: the media id must be 1 to 19 decimal digits\n", status: .badRequest)
        }
        // Message media without a valid signature is answered as if it did not exist, so that
        // nobody learns which ids are someone's private media.
        let notFound = Self.text(
            "not found: no media has id \(id), or it belongs to a conversation and the URL's signature is missing, wrong or expired\n",
            status: .notFound)
        guard let record = try await media.catalog.record(id.value) else { return notFound }
        var headers: HTTPFields = [
            .contentType: record.type.rawValue, .eTag: "\"\(record.sha256)\"", .acceptRanges: "bytes",
            Self.contentTypeOptions: "nosniff",
        ]
        if record.isPrivate {
            let now = Date()
            guard let expires = media.signer.validExpiry(of: record.id, query: request.uri.query, now: now) else {
                return notFound
            }
            let remaining = max(0, min(expires - Int64(now.timeIntervalSince1970), 3600))
            headers[.cacheControl] = "private, max-age=\(remaining)"
        } else {
            headers[.cacheControl] = "public, max-age=31536000, immutable"
        }

        if record.purpose == .export {
            headers[.cacheControl] = "no-store"
            headers[.contentLength] = String(record.byteSize)
            headers[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"aviary-export-\(record.id).zip\""
            if request.method == .head { return Response(status: .ok, headers: headers) }
            // Taken before a byte goes out: a second download finds nothing.
            guard try await media.items.take(record.id) else { return notFound }
            _ = try await media.catalog.forget([record.id])
            let (storage, items) = (media.storage, media.items)
            return Response(
                status: .ok, headers: headers,
                body: body(record.sha256, 0...(record.byteSize - 1), logger: logger) {
                    if try await items.holders(of: record.sha256) == 0 { try await storage.removeObject(sha256: record.sha256) }
                })
        }
        if let candidates = request.headers[.ifNoneMatch], Self.matches(candidates, record.sha256) {
            // A 304 may carry Content-Length only as the full representation's (RFC 9110 §8.6).
            headers[.contentLength] = String(record.byteSize)
            return Response(status: .notModified, headers: headers)
        }
        var range = ByteRange(header: request.headers[.range], size: record.byteSize)
        if let condition = request.headers[.ifRange], condition != "\"\(record.sha256)\"" {
            range = .whole
        }
        switch range {
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(record.byteSize)"
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: .rangeNotSatisfiable, headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(string: "range not satisfiable: the file holds \(record.byteSize) bytes\n")))
        case .satisfiable(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(record.byteSize)"
            return Response(status: .partialContent, headers: headers, body: body(record.sha256, bytes, logger: logger))
        case .whole:
            return Response(status: .ok, headers: headers, body: body(record.sha256, 0...(record.byteSize - 1), logger: logger))
        }
    }

    /// `bytes` of the stored file, streamed: never more than a piece in memory, and nothing read
    /// for HEAD, whose response drops the body. A file that cannot be read cuts the body short.
    /// `then` runs once the whole of it is out.
    private func body(
        _ sha256: String, _ bytes: ClosedRange<Int64>, logger: Logger, then: @escaping @Sendable () async throws -> Void = {}
    ) -> ResponseBody {
        let storage = media.storage
        return ResponseBody(contentLength: bytes.count) { writer in
            var offset = bytes.lowerBound
            while offset <= bytes.upperBound {
                let count = Int(min(Int64(Self.pieceBytes), bytes.upperBound - offset + 1))
                let piece: ByteBuffer
                do {
                    piece = try await storage.read(sha256: sha256, offset: offset, count: count)
                    guard piece.readableBytes == count else { throw MediaHTTPError.shortFile(sha256) }
                } catch {
                    logger.error("media file unreadable", metadata: ["media.sha256": "\(sha256)", "error": "\(error)"])
                    throw error
                }
                try await writer.write(piece)
                offset += Int64(count)
            }
            try await writer.finish(nil)
            try await then()
        }
    }

    private static func text(_ text: String, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// `If-None-Match`: `*` or a list of entity tags, compared weakly (RFC 9110 §13.1.2).
    static func matches(_ header: String, _ sha256: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "\"\(sha256)\""
        }
    }
}

/// Stored content ended before its recorded size (a damaged store).
enum MediaHTTPError: Error {
    case shortFile(String)
}

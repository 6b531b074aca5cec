import AviaryAPI
import Foundation
import NIOCore
import NIOHTTP1
import ServiceKit

/// `GET` and `HEAD /media/<id>` on the admin HTTP port: the bytes of a finished medium with
/// `Content-Type`, `Content-Length`, a strong `ETag` (its SHA-256), `If-None-Match` (304),
/// single `Range`s (206, 416; `If-Range` honoured) and cache headers: a year for public media,
/// private and no longer than the signature for message media, which needs a valid `exp`/`sig`
/// (without one it is not found, like an id that does not exist).
struct MediaHTTPRoute: Sendable {
    let media: MediaService

    /// Bodies up to this size are read in one piece; larger ones are streamed in pieces of it.
    static let pieceBytes = 256 * 1024
    static let prefix = "/media/"

    var route: AdminRoute {
        AdminRoute(pathPrefix: Self.prefix, methods: [.GET]) { request in try await respond(to: request) }
    }

    func respond(to request: AdminRequest) async throws -> AdminResponse {
        let idText = request.path.dropFirst(Self.prefix.count)
        guard let id = EntityID(String(idText)) else {
            return .text("bad request: the media id must be 1 to 19 decimal digits\n", status: .badRequest)
        }
        // Message media without a valid signature is answered as if it did not exist, so that
        // nobody learns which ids are someone's private media.
        let notFound = AdminResponse.text(
            "not found: no media has id \(id), or it belongs to a conversation and the URL's signature is missing, wrong or expired\n",
            status: .notFound)
        guard let record = try await media.catalog.record(id.value) else { return notFound }
        var headers: HTTPHeaders = [
            "content-type": record.type.rawValue, "etag": "\"\(record.sha256)\"", "accept-ranges": "bytes",
            "x-content-type-options": "nosniff",
        ]
        if record.isPrivate {
            let now = Date()
            guard let expires = media.signer.validExpiry(of: record.id, query: request.query, now: now) else {
                return notFound
            }
            let remaining = max(0, min(expires - Int64(now.timeIntervalSince1970), 3600))
            headers.add(name: "cache-control", value: "private, max-age=\(remaining)")
        } else {
            headers.add(name: "cache-control", value: "public, max-age=31536000, immutable")
        }

        if let candidates = request.headers.first(name: "if-none-match"), Self.matches(candidates, record.sha256) {
            // A 304 may carry Content-Length only as the full representation's (RFC 9110 §8.6).
            headers.add(name: "content-length", value: String(record.byteSize))
            return AdminResponse(status: .notModified, headers: headers)
        }
        var range = ByteRange(header: request.headers.first(name: "range"), size: record.byteSize)
        if let condition = request.headers.first(name: "if-range"), condition != "\"\(record.sha256)\"" {
            range = .whole
        }
        switch range {
        case .unsatisfiable:
            headers.replaceOrAdd(name: "content-range", value: "bytes */\(record.byteSize)")
            headers.replaceOrAdd(name: "content-type", value: "text/plain; charset=utf-8")
            return AdminResponse(
                status: .rangeNotSatisfiable, headers: headers,
                body: ByteBuffer(string: "range not satisfiable: the file holds \(record.byteSize) bytes\n"))
        case .satisfiable(let bytes):
            headers.replaceOrAdd(name: "content-range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(record.byteSize)")
            return try await body(record, bytes, status: .partialContent, headers: headers, method: request.method)
        case .whole:
            return try await body(record, 0...(record.byteSize - 1), status: .ok, headers: headers, method: request.method)
        }
    }

    /// The response carrying `bytes` of the file: read at once when small, streamed otherwise.
    private func body(
        _ record: MediaRecord, _ bytes: ClosedRange<Int64>, status: HTTPResponseStatus, headers: HTTPHeaders,
        method: HTTPMethod
    ) async throws -> AdminResponse {
        var headers = headers
        let length = bytes.upperBound - bytes.lowerBound + 1
        headers.replaceOrAdd(name: "content-length", value: String(length))
        guard method != .HEAD else { return AdminResponse(status: status, headers: headers) }
        let storage = media.storage
        if length <= Int64(Self.pieceBytes) {
            let buffer = try await storage.read(sha256: record.sha256, offset: bytes.lowerBound, count: Int(length))
            return AdminResponse(status: status, headers: headers, body: buffer)
        }
        let sha256 = record.sha256
        return AdminResponse(status: status, headers: headers, bodyStream: { write in
            var offset = bytes.lowerBound
            while offset <= bytes.upperBound {
                let count = Int(min(Int64(Self.pieceBytes), bytes.upperBound - offset + 1))
                let piece = try await storage.read(sha256: sha256, offset: offset, count: count)
                guard piece.readableBytes == count else { throw MediaHTTPError.shortFile(sha256) }
                try await write(piece)
                offset += Int64(count)
            }
        })
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

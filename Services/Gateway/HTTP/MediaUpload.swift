import Foundation
import Hummingbird
import MultipartKit
import NIOCore
import NIOFoundationCompat

/// The parts of `POST /media` that read what apps send: the media type of a `Content-Type`, and a
/// `multipart/form-data` body's `file` part, written to a temporary file as it arrives (media must
/// be told the size before the first chunk, and the body is not held in memory).
enum MediaUpload {
    /// An upload refused before it reached media: the answer to send.
    struct Refusal: Error {
        var response: Response
    }

    struct SpooledFile {
        var url: URL
        var contentType: String
        var byteSize: Int64
    }

    /// The type a file's name says (`.png`, `.jpg`, `.mov`, …), for a part sent without its own
    /// (as some Mastodon clients send files); media checks it against the bytes.
    static func mediaType(fileName: String) -> String? {
        let types = ["png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
                     "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime"]
        return fileName.split(separator: ".").last.flatMap { types[$0.lowercased()] }
    }

    /// `image/png; charset=…` → `image/png`, lower-cased.
    static func mediaType(_ header: String) -> String {
        header.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }

    /// The `file` part of a multipart body in a temporary file (the caller removes it), or the
    /// refusal to answer with.
    static func spoolFilePart(of request: Request, contentType header: String, limit: Int) async -> Result<SpooledFile, Refusal> {
        switch await readMultipart(of: request, contentType: header, limit: limit, filePart: "file") {
        case .failure(let refusal): return .failure(refusal)
        case .success(let form):
            guard let file = form.file else {
                return .failure(Refusal(response: EdgeResponses.failure(.badRequest, "the multipart/form-data body has no complete part named file")))
            }
            return .success(file)
        }
    }

    /// A multipart body read: the part named as the file, spooled (nil when there is none), and
    /// the other parts' values as text.
    struct MultipartForm {
        var file: SpooledFile?
        var fields: [(name: String, value: String)]
    }

    /// The most bytes of one part that is not the file.
    static let fieldLimit = 64 << 10

    /// Reads a multipart body: the part `filePart` into a temporary file (the caller removes it),
    /// the others as text; or the refusal to answer with.
    static func readMultipart(of request: Request, contentType header: String, limit: Int, filePart: String) async
        -> Result<MultipartForm, Refusal>
    {
        guard let boundary = parameter("boundary", of: header), !boundary.isEmpty, boundary.utf8.count <= 70 else {
            return .failure(Refusal(response: EdgeResponses.failure(.badRequest, "multipart/form-data needs a boundary of 1 to 70 characters")))
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("aviary-upload-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let file = try? FileHandle(forWritingTo: url) else {
            return .failure(Refusal(response: EdgeResponses.failure(.internalServerError, "the upload could not be spooled")))
        }
        let parser = MultipartParser(boundary: boundary)
        var headers: [String: String] = [:]
        var inFile = false
        var fileType: String?
        var written = 0
        var complete = false
        var writeFailed = false
        var field = ByteBuffer()
        var fields: [(name: String, value: String)] = []
        var fieldTooLarge = false
        parser.onHeader = { name, value in headers[name.lowercased()] = value }
        parser.onBody = { buffer in
            let disposition = headers["content-disposition"] ?? ""
            if !inFile, !complete, parameter("name", of: disposition) == filePart {
                inFile = true
                fileType = headers["content-type"].map(mediaType)
                if fileType == nil || fileType == "application/octet-stream" {
                    fileType = parameter("filename", of: disposition).flatMap(mediaType(fileName:)) ?? fileType
                }
            }
            guard inFile else {
                var buffer = buffer
                if field.readableBytes + buffer.readableBytes <= fieldLimit { field.writeBuffer(&buffer) } else { fieldTooLarge = true }
                return
            }
            written += buffer.readableBytes
            guard written <= limit else { return }
            do { try file.write(contentsOf: Data(buffer: buffer)) } catch { writeFailed = true }
        }
        parser.onPartComplete = {
            if inFile {
                complete = true
            } else if let name = parameter("name", of: headers["content-disposition"] ?? "") {
                fields.append((name, String(buffer: field)))
            }
            field.clear()
            inFile = false
            headers = [:]
        }
        let refusal: Response?
        do {
            for try await buffer in request.body {
                try parser.execute(buffer)
                if written > limit || fieldTooLarge { break }
            }
            refusal = nil
        } catch {
            refusal = EdgeResponses.failure(.badRequest, "the multipart/form-data body could not be read")
        }
        try? file.close()
        let failure: Response? =
            if let refusal { refusal }
            else if written > limit { EdgeResponses.failure(.contentTooLarge, "an upload is at most \(limit) bytes") }
            else if fieldTooLarge { EdgeResponses.failure(.contentTooLarge, "a part other than \(filePart) is at most \(fieldLimit) bytes") }
            else if writeFailed { EdgeResponses.failure(.internalServerError, "the upload could not be spooled") }
            else if complete, (fileType ?? "").isEmpty {
                EdgeResponses.failure(.unsupportedMediaType, "the \(filePart) part needs its Content-Type, or a file name that says its type")
            }
            else { nil }
        if let failure {
            try? FileManager.default.removeItem(at: url)
            return .failure(Refusal(response: failure))
        }
        guard complete, let fileType else {
            try? FileManager.default.removeItem(at: url)
            return .success(MultipartForm(file: nil, fields: fields))
        }
        return .success(MultipartForm(file: SpooledFile(url: url, contentType: fileType, byteSize: Int64(written)), fields: fields))
    }

    /// The file's bytes, a MiB at a time, read as they are asked for.
    struct FileChunks: AsyncSequence {
        let url: URL

        struct AsyncIterator: AsyncIteratorProtocol {
            let file: FileHandle?

            mutating func next() async throws -> ByteBuffer? {
                guard let file else { throw CocoaError(.fileReadUnknown) }
                guard let data = try file.read(upToCount: 1 << 20), !data.isEmpty else {
                    try? file.close()
                    return nil
                }
                return ByteBuffer(data: data)
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(file: try? FileHandle(forReadingFrom: url))
        }
    }

    /// A parameter of a header value (`boundary` of a Content-Type, `name` of a Content-Disposition), unquoted.
    static func parameter(_ name: String, of header: String) -> String? {
        for part in header.split(separator: ";").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == name else { continue }
            return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }
}

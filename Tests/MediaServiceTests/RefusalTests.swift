import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

@Suite("refusals")
struct RefusalTests {
    @Test("a PNG declared as a JPEG is refused at the end and the upload discarded")
    func contentMustMatchItsType() async throws {
        let media = try await MediaStack.shared()
        let gus = try await media.stack.makeUser("gus")
        let png = MediaFixtures.png(width: 8, height: 8, seed: 21)
        let started = try await media.begin(gus, png, type: "image/jpeg")
        try await media.sendChunk(gus, upload: started.uploadId, png, index: 0)
        let error = await rpcError { _ = try await media.finish(gus, upload: started.uploadId) }
        #expect(error?.reason == "validation" && error?.field == "contentType")
        #expect(error?.message.contains("image/png") == true)
        #expect(try !media.partFiles().contains("\(started.uploadId).part"))
        #expect(try !media.objectFiles().contains(MediaFixtures.sha256Hex(png)))

        let text = Array("just some text, not an image at all".utf8)
        let plain = try await media.begin(gus, text, type: "image/gif")
        try await media.sendChunk(gus, upload: plain.uploadId, text, index: 0)
        let notImage = await rpcError { _ = try await media.finish(gus, upload: plain.uploadId) }
        #expect(notImage?.reason == "validation" && notImage?.field == "contentType")
    }

    /// Headers crafted to overflow the readers' arithmetic or to make them read byte by byte: each
    /// upload gets an answer, and the service goes on serving.
    @Test("hostile headers: a 64-bit box size near Int64.max, an endless movie, a movie of 32,768 empty boxes, a 4-billion-pixel PNG, a JPEG of fill bytes")
    func hostileHeaders() async throws {
        let media = try await MediaStack.shared()
        let ivy = try await media.stack.makeUser("ivy")
        func be(_ value: UInt64, _ width: Int) -> [UInt8] { (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
        let ftyp = be(16, 4) + Array("ftypisom".utf8) + be(0, 4)
        let hugeBox = ftyp + be(1, 4) + Array("mdat".utf8) + be(UInt64.max, 8)
        // moov > mvhd version 1: times (8 + 8), time scale 1, duration 2^56.
        let mvhd = be(8 + 4 + 28, 4) + Array("mvhd".utf8) + [1, 0, 0, 0] + be(0, 8) + be(0, 8) + be(1, 4) + be(1 << 56, 8)
        let endless = ftyp + be(UInt64(8 + mvhd.count), 4) + Array("moov".utf8) + mvhd
        for (name, bytes) in [("huge box", hugeBox), ("endless", endless)] {
            let started = try await media.begin(ivy, bytes, type: "video/mp4")
            try await media.sendChunk(ivy, upload: started.uploadId, bytes, index: 0)
            let finished = try await media.finish(ivy, upload: started.uploadId)
            #expect(finished.contentType == "video/mp4", "\(name)")
        }

        // Eight tracks of 4,096 empty boxes each, then the real track: the walk reads 4,096 box
        // headers in all, not 4,096 per box (a 100 MiB file of them took tens of seconds of CPU),
        // and gives up before the picture size.
        let free = be(8, 4) + Array("free".utf8)
        let emptyTrak = be(UInt64(8 + 4096 * 8), 4) + Array("trak".utf8) + Array([[UInt8]](repeating: free, count: 4096).joined())
        // The real track of a fixture movie: ftyp (24 bytes), then moov's header (8) and mvhd (108), then the trak.
        let real = MediaFixtures.movie(durationMs: 1000, width: 320, height: 240)
        let moovEnd = 24 + real[24..<28].reduce(0) { $0 << 8 | Int($1) }
        let traks = Array([[UInt8]](repeating: emptyTrak, count: 8).joined()) + real[(24 + 8 + 108)..<moovEnd]
        let crowded = ftyp + be(UInt64(8 + traks.count), 4) + Array("moov".utf8) + traks
        let crowdedMovie = try await media.upload(ivy, crowded, type: "video/mp4")
        #expect(crowdedMovie.contentType == "video/mp4" && crowdedMovie.width == nil)

        var png = MediaFixtures.png(width: 8, height: 8, seed: 31)
        png.replaceSubrange(16..<20, with: be(UInt64(UInt32.max), 4))
        let wide = try await media.begin(ivy, png, type: "image/png")
        try await media.sendChunk(ivy, upload: wide.uploadId, png, index: 0)
        let tooWide = await rpcError { _ = try await media.finish(ivy, upload: wide.uploadId) }
        #expect(tooWide?.reason == "validation" && tooWide?.message.contains("4294967295 pixels wide") == true)

        let fill = [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0xFF, count: MediaStack.chunkBytes - 3)
        let fillUpload = try await media.begin(ivy, fill, type: "image/jpeg")
        try await media.sendChunk(ivy, upload: fillUpload.uploadId, fill, index: 0)
        let notJPEG = await rpcError { _ = try await media.finish(ivy, upload: fillUpload.uploadId) }
        #expect(notJPEG?.reason == "validation" && notJPEG?.field == "contentType")

        // Still serving.
        let png2 = MediaFixtures.png(width: 4, height: 4, seed: 32)
        #expect(try await media.upload(ivy, png2, type: "image/png").contentType == "image/png")
    }

    /// Unfinished uploads hold disk space up to their declared sizes: one user may have 20 open at
    /// once (AVIARY_MEDIA_OPEN_UPLOADS_PER_USER), even when asking for them all at the same moment.
    @Test("a user may have at most 20 uploads open; finishing one makes room")
    func openUploadsAreLimited() async throws {
        let media = try await MediaStack.shared()
        let (ola, pia) = (try await media.stack.makeUser("hoarder"), try await media.stack.makeUser("other"))
        let png = MediaFixtures.png(width: 4, height: 4, seed: 61)
        let outcomes = await withTaskGroup(of: Result<MediaStack.Started, any Error>.self) { group in
            for _ in 0..<25 {
                group.addTask {
                    do { return .success(try await media.begin(ola, png, type: "image/png")) } catch { return .failure(error) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let started = outcomes.compactMap { try? $0.get() }
        #expect(started.count == 20)
        let refusal = outcomes.compactMap { outcome -> RPCError? in
            if case .failure(let error) = outcome { return error as? RPCError } else { return nil }
        }.first
        #expect(refusal?.reason == "rate_limited" && refusal?.message.contains("at most 20 uploads") == true)
        let retry = refusal?.data?["retryAfterMs"]?.intValue ?? 0
        #expect(retry > 3_600_000 && retry <= 86_400_000, "until the oldest expires: \(retry) ms")
        // Another user is not held back; finishing one makes room.
        _ = try await media.begin(pia, png, type: "image/png")
        try await media.sendChunk(ola, upload: started[0].uploadId, png, index: 0)
        _ = try await media.finish(ola, upload: started[0].uploadId)
        _ = try await media.begin(ola, png, type: "image/png")
    }

    @Test("bad chunks get a clear error and write nothing: negative offset, beyond the size, misaligned, wrong length, bad base64, not an id")
    func badChunksTouchNothing() async throws {
        let media = try await MediaStack.shared()
        let hal = try await media.stack.makeUser("hal")
        let png = MediaFixtures.png(width: 60, height: 40, seed: 5)
        let started = try await media.begin(hal, png, type: "image/png")
        let chunk = Data(png[0..<MediaStack.chunkBytes]).base64EncodedString()
        let cases: [(String, [String: JSONValue], String)] = [
            ("negative offset", ["offset": -4096, "data": .string(chunk)], "offset"),
            ("beyond the size", ["offset": .int(Int64(png.count + 4096 - png.count % 4096)), "data": .string(chunk)], "offset"),
            ("misaligned", ["offset": 100, "data": .string(chunk)], "offset"),
            ("wrong length", ["offset": 0, "data": .string(Data(png[0..<100]).base64EncodedString())], "data"),
            ("bad base64", ["offset": 0, "data": "this is *not* base64!"], "data"),
            ("empty data", ["offset": 0, "data": ""], "data"),
        ]
        for (name, params, field) in cases {
            var all = params
            all["uploadId"] = .string(started.uploadId)
            let error = await rpcError {
                _ = try await media.stack.call("media", "media.uploadChunk", all, as: hal, decoding: JSONValue.self)
            }
            #expect(error?.reason == "validation", "\(name)")
            #expect(error?.field == field, "\(name): \(error?.message ?? "")")
        }
        let lastChunkTooLong = await rpcError {
            let lastOffset = Int64((png.count / MediaStack.chunkBytes) * MediaStack.chunkBytes)
            _ = try await media.stack.call(
                "media", "media.uploadChunk",
                ["uploadId": .string(started.uploadId), "offset": .int(lastOffset), "data": .string(chunk)], as: hal,
                decoding: JSONValue.self)
        }
        #expect(lastChunkTooLong?.reason == "validation")
        for id in ["../../etc/passwd", "12abc", "-5", "0", "99999999999999999999", ""] {
            let error = await rpcError {
                _ = try await media.stack.call(
                    "media", "media.uploadChunk", ["uploadId": .string(id), "offset": 0, "data": .string(chunk)], as: hal,
                    decoding: JSONValue.self)
            }
            #expect(error?.reason == "validation" && error?.field == "uploadId", "uploadId \(id)")
        }
        #expect(try !media.partFiles().contains("\(started.uploadId).part"))
        let rows = try await media.stack.database.query(
            "SELECT received FROM media.uploads WHERE id = $1", [Int64(started.uploadId)!])
        #expect(try rows[0].decode(Int64.self, at: 0) == 0)
    }

    @Test("begin refuses unknown types, sizes over the limits, a video avatar, message media without a conversation")
    func beginRefusals() async throws {
        let media = try await MediaStack.shared()
        let ida = try await media.stack.makeUser("ida")
        func begin(_ params: [String: JSONValue]) async -> RPCError? {
            await rpcError { _ = try await media.stack.call("media", "media.beginUpload", params, as: ida, decoding: JSONValue.self) }
        }
        let unknown = await begin(["contentType": "image/svg+xml", "byteSize": 10, "purpose": "tweet"])
        #expect(unknown?.reason == "validation" && unknown?.field == "contentType")
        let hugeImage = await begin(["contentType": "image/png", "byteSize": .int(16 << 20 + 1), "purpose": "tweet"])
        #expect(hugeImage?.reason == "too_large" && hugeImage?.code == -32013)
        let hugeVideo = await begin(["contentType": "video/mp4", "byteSize": .int(100 << 20 + 1), "purpose": "tweet"])
        #expect(hugeVideo?.reason == "too_large")
        let bigVideo = await begin(["contentType": "video/mp4", "byteSize": .int(100 << 20), "purpose": "tweet"])
        #expect(bigVideo == nil)
        let empty = await begin(["contentType": "image/png", "byteSize": 0, "purpose": "tweet"])
        #expect(empty?.field == "byteSize")
        let videoAvatar = await begin(["contentType": "video/mp4", "byteSize": 100, "purpose": "avatar"])
        #expect(videoAvatar?.field == "contentType")
        let noConversation = await begin(["contentType": "image/png", "byteSize": 100, "purpose": "message"])
        #expect(noConversation?.field == "conversationId")
        let strayConversation = await begin(
            ["contentType": "image/png", "byteSize": 100, "purpose": "tweet", "conversationId": "12"])
        #expect(strayConversation?.field == "conversationId")
        let badPurpose = await begin(["contentType": "image/png", "byteSize": 100, "purpose": "banner"])
        #expect(badPurpose?.field == "purpose")
        let badHash = await begin(["contentType": "image/png", "byteSize": 100, "purpose": "tweet", "sha256": "xyz"])
        #expect(badHash?.field == "sha256")
        let anonymous = await rpcError {
            _ = try await media.stack.call(
                "media", "media.beginUpload", ["contentType": "image/png", "byteSize": 100, "purpose": "tweet"], decoding: JSONValue.self)
        }
        #expect(anonymous?.reason == "unauthenticated")
    }

    @Test("another user can neither continue, finish nor read an upload")
    func uploadsBelongToTheirOwner() async throws {
        let media = try await MediaStack.shared()
        let (jo, kit) = (try await media.stack.makeUser("jo"), try await media.stack.makeUser("kit"))
        let png = MediaFixtures.png(width: 10, height: 10, seed: 11)
        let started = try await media.begin(jo, png, type: "image/png")
        let chunk = await rpcError { try await media.sendChunk(kit, upload: started.uploadId, png, index: 0) }
        #expect(chunk?.reason == "forbidden")
        #expect(try !media.partFiles().contains("\(started.uploadId).part"))
        try await media.sendChunk(jo, upload: started.uploadId, png, index: 0)
        let finish = await rpcError { _ = try await media.finish(kit, upload: started.uploadId) }
        #expect(finish?.reason == "forbidden")
        let readUnfinished = await rpcError {
            _ = try await media.stack.call(
                "media", "media.read", ["mediaId": .string(started.uploadId), "offset": 0, "length": 10], as: kit,
                decoding: JSONValue.self)
        }
        #expect(readUnfinished?.reason == "not_found")
        let http = try await HTTPProbe.get(port: media.adminPort, "/media/\(started.uploadId)")
        #expect(http.status == 404)
        let done = try await media.finish(jo, upload: started.uploadId)
        // Finishing someone else's finished upload does not hand it over either.
        let late = await rpcError { _ = try await media.finish(kit, upload: started.uploadId) }
        #expect(late?.reason == "not_found" || late?.reason == "forbidden")
        #expect(done.width == 10)
    }
}

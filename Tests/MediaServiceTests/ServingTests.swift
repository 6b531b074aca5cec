import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

@Suite("HTTP serving")
struct ServingTests {
    @Test("GET serves the bytes with type, length, strong ETag and long caching; If-None-Match gives 304; HEAD has no body")
    func servesWholeFiles() async throws {
        let media = try await MediaStack.shared()
        let lou = try await media.stack.makeUser("lou")
        let png = MediaFixtures.png(width: 33, height: 21, seed: 40)
        let stored = try await media.upload(lou, png, type: "image/png")
        let target = MediaStack.target(of: stored.url)

        let whole = try await HTTPProbe.get(port: media.adminPort, target)
        #expect(whole.status == 200)
        #expect(whole.body == png)
        #expect(whole.headers["content-type"] == "image/png")
        #expect(whole.headers["content-length"] == String(png.count))
        let etag = "\"\(MediaFixtures.sha256Hex(png))\""
        #expect(whole.headers["etag"] == etag)
        #expect(whole.headers["accept-ranges"] == "bytes")
        #expect(whole.headers["cache-control"]?.contains("max-age=31536000") == true)

        let cached = try await HTTPProbe.get(port: media.adminPort, target, headers: ["If-None-Match": "\"other\", \(etag)"])
        #expect(cached.status == 304 && cached.body.isEmpty && cached.headers["etag"] == etag)
        let changed = try await HTTPProbe.get(port: media.adminPort, target, headers: ["If-None-Match": "\"other\""])
        #expect(changed.status == 200 && changed.body == png)

        let head = try await HTTPProbe.get(port: media.adminPort, target, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(png.count))

        let jpeg = MediaFixtures.jpeg(width: 8, height: 8)
        let photo = try await media.upload(lou, jpeg, type: "image/jpeg")
        let served = try await HTTPProbe.get(port: media.adminPort, MediaStack.target(of: photo.url))
        #expect(served.body == jpeg && served.headers["content-type"] == "image/jpeg")
    }

    @Test("Range requests: 206 with Content-Range for a, a-b and -n; 416 past the end, however far; If-Range with another tag sends all")
    func servesRanges() async throws {
        let media = try await MediaStack.shared()
        let max = try await media.stack.makeUser("max")
        let movie = MediaFixtures.movie(durationMs: 1000, width: 16, height: 16, payload: 3 * MediaStack.chunkBytes)
        let stored = try await media.upload(max, movie, type: "video/mp4")
        let target = MediaStack.target(of: stored.url)
        let size = movie.count

        let middle = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=100-1099"])
        #expect(middle.status == 206)
        #expect(middle.body == Array(movie[100...1099]))
        #expect(middle.headers["content-range"] == "bytes 100-1099/\(size)")
        #expect(middle.headers["content-length"] == "1000")

        let tail = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(movie[(size - 10)...]))
        let open = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=\(size - 3)-"])
        #expect(open.status == 206 && open.body == Array(movie[(size - 3)...]))
        let clipped = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=0-99999999"])
        #expect(clipped.status == 206 && clipped.body == movie)

        let past = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=\(size)-"])
        #expect(past.status == 416 && past.headers["content-range"] == "bytes */\(size)")
        // Positions too long for 64 bits lie past the end of any file; a sign is no position.
        let huge = "99999999999999999999"
        let farPast = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=\(huge)-"])
        #expect(farPast.status == 416 && farPast.headers["content-range"] == "bytes */\(size)")
        let farEnd = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=10-\(huge)"])
        #expect(farEnd.status == 206 && farEnd.body == Array(movie[10...]))
        let longSuffix = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=-\(huge)"])
        #expect(longSuffix.status == 206 && longSuffix.body == movie)
        let signed = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=+5-9"])
        #expect(signed.status == 200 && signed.body == movie)

        let stale = try await HTTPProbe.get(
            port: media.adminPort, target, headers: ["Range": "bytes=0-9", "If-Range": "\"not-the-tag\""])
        #expect(stale.status == 200 && stale.body == movie)
    }

    @Test("a large file is streamed whole and in ranges across pieces")
    func streamsLargeFiles() async throws {
        let media = try await MediaStack.shared()
        let ned = try await media.stack.makeUser("ned")
        // Over the 256 KiB piece of the HTTP route: 90 chunks of 4 KiB, sent 8 at a time.
        let movie = MediaFixtures.movie(durationMs: 90_000, width: 640, height: 360, payload: 360 * 1024)
        let started = try await media.begin(ned, movie, type: "video/mp4")
        let chunks = (movie.count + MediaStack.chunkBytes - 1) / MediaStack.chunkBytes
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: lane, to: chunks, by: 8) {
                        try await media.sendChunk(ned, upload: started.uploadId, movie, index: index)
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try await media.finish(ned, upload: started.uploadId)
        let target = MediaStack.target(of: stored.url)
        let whole = try await HTTPProbe.get(port: media.adminPort, target)
        #expect(whole.status == 200 && whole.body == movie)
        let range = try await HTTPProbe.get(port: media.adminPort, target, headers: ["Range": "bytes=1000-300000"])
        #expect(range.status == 206 && range.body == Array(movie[1000...300000]))

        let read: [String: String] = try await media.stack.call(
            "media", "media.read", ["mediaId": .string(stored.id.description), "offset": 262_000, "length": 5000])
        #expect(Data(base64Encoded: read["data"] ?? "") == Data(movie[262_000..<267_000]))
    }

    @Test("ids that are not media ids get 400; other paths under /media/ and unknown ids 404, other methods 405; media.read refuses bad offsets")
    func refusesBadRequests() async throws {
        let media = try await MediaStack.shared()
        for target in ["/media/%2e%2e%2fparts", "/media/abc", "/media/-1", "/media/99999999999999999999"] {
            let response = try await HTTPProbe.get(port: media.adminPort, target)
            #expect(response.status == 400, "\(target)")
        }
        // Not of the route's shape, /media/{id}: no resource, and nothing reaches the store.
        for target in ["/media/../../etc/passwd", "/media/", "/media/1/2"] {
            let response = try await HTTPProbe.get(port: media.adminPort, target)
            #expect(response.status == 404, "\(target)")
        }
        let unknown = try await HTTPProbe.get(port: media.adminPort, "/media/123456789")
        #expect(unknown.status == 404)
        let post = try await HTTPProbe.get(port: media.adminPort, "/media/123456789", method: "DELETE")
        #expect(post.status == 405)

        let olga = try await media.stack.makeUser("olga")
        let stored = try await media.upload(olga, MediaFixtures.png(width: 5, height: 5, seed: 60), type: "image/png")
        for (offset, length, field) in [(-1, 10, "offset"), (0, 0, "length"), (0, 600_000, "length"), (1_000_000, 10, "offset")] {
            let error = await rpcError {
                _ = try await media.stack.call(
                    "media", "media.read", ["mediaId": .string(stored.id.description), "offset": .int(Int64(offset)), "length": .int(Int64(length))],
                    decoding: JSONValue.self)
            }
            #expect(error?.reason == "validation" && error?.field == field, "offset \(offset) length \(length)")
        }
        let notID = await rpcError {
            _ = try await media.stack.call("media", "media.get", ["mediaId": "../1"], decoding: JSONValue.self)
        }
        #expect(notID?.field == "mediaId")
    }

    @Test("media.getMany answers in the order asked and leaves out unknown, unfinished and mismatched ids")
    func getMany() async throws {
        let media = try await MediaStack.shared()
        let (pat, quinn) = (try await media.stack.makeUser("pat"), try await media.stack.makeUser("quinn"))
        let a = try await media.upload(pat, MediaFixtures.png(width: 4, height: 4, seed: 70), type: "image/png")
        let b = try await media.upload(pat, MediaFixtures.png(width: 4, height: 4, seed: 71), type: "image/png", purpose: "avatar")
        let c = try await media.upload(quinn, MediaFixtures.png(width: 4, height: 4, seed: 72), type: "image/png")
        let pending = try await media.begin(pat, MediaFixtures.png(width: 4, height: 4, seed: 73), type: "image/png")
        let ids: [JSONValue] = [.string(c.id.description), .string(b.id.description), "1", .string(pending.uploadId), .string(a.id.description)]
        let all: [Media] = try await media.stack.callInternal("media", "media.getMany", ["ids": .array(ids)])
        #expect(all.map(\.id) == [c.id, b.id, a.id])
        let owned: [Media] = try await media.stack.callInternal(
            "media", "media.getMany", ["ids": .array(ids), "ownerId": pat.idValue, "purpose": "tweet"])
        #expect(owned.map(\.id) == [a.id])
        let asUser = await rpcError {
            _ = try await media.stack.call("media", "media.getMany", ["ids": .array(ids)], as: pat, decoding: JSONValue.self)
        }
        #expect(asUser?.reason == "forbidden")
    }
}

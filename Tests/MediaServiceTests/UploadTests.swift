import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import Logging
import RPC
import TestSupport
import Testing

@Suite("chunked uploads")
struct UploadTests {
    @Test("a PNG, a JPEG, a GIF, a WebP, an MP4 and a QuickTime movie upload in chunks sent out of order, with their sizes and durations")
    func uploadsRealFiles() async throws {
        let media = try await MediaStack.shared()
        let ann = try await media.stack.makeUser("ann")
        let png = MediaFixtures.png(width: 60, height: 50)
        #expect(png.count > 2 * MediaStack.chunkBytes)
        let stored = try await media.upload(ann, png, type: "image/png")
        #expect(stored.contentType == "image/png")
        #expect(stored.byteSize == Int64(png.count))
        #expect(stored.width == 60 && stored.height == 50 && stored.durationMs == nil)
        #expect(stored.url.hasSuffix("/media/\(stored.id)"))

        let jpeg = try await media.upload(ann, MediaFixtures.jpeg(width: 24, height: 16), type: "image/jpeg")
        #expect(jpeg.width == 24 && jpeg.height == 16)

        let mp4 = try await media.upload(
            ann, MediaFixtures.movie(durationMs: 2500, width: 320, height: 240, payload: 9000), type: "video/mp4")
        #expect(mp4.durationMs == 2500 && mp4.width == 320 && mp4.height == 240)

        let mov = try await media.upload(
            ann, MediaFixtures.movie(quickTime: true, durationMs: 1200, width: 64, height: 48), type: "video/quicktime")
        #expect(mov.contentType == "video/quicktime" && mov.durationMs == 1200)

        let gif = try await media.upload(ann, MediaFixtures.gif(width: 7, height: 5), type: "image/gif")
        #expect(gif.width == 7 && gif.height == 5)
        let webp = try await media.upload(ann, MediaFixtures.webp(width: 300, height: 200), type: "image/webp")
        #expect(webp.width == 300 && webp.height == 200)

        let fetched: Media = try await media.stack.call("media", "media.get", ["mediaId": .string(stored.id.description)])
        #expect(fetched == stored)
        // The part is gone once the upload is finished.
        #expect(try !media.partFiles().contains("\(stored.id).part"))
    }

    @Test("repeated chunks count once; finishing again returns the same media; a declared SHA-256 is checked")
    func idempotentChunksAndFinish() async throws {
        let media = try await MediaStack.shared()
        let bo = try await media.stack.makeUser("bo")
        let png = MediaFixtures.png(width: 60, height: 40, seed: 3)
        let started = try await media.begin(bo, png, type: "image/png", sha256: MediaFixtures.sha256Hex(png))
        #expect(started.chunkBytes == MediaStack.chunkBytes)
        let first = try await media.sendChunk(bo, upload: started.uploadId, png, index: 0)
        let again = try await media.sendChunk(bo, upload: started.uploadId, png, index: 0)
        #expect(first == Int64(MediaStack.chunkBytes) && again == first)
        let incomplete = await rpcError { _ = try await media.finish(bo, upload: started.uploadId) }
        #expect(incomplete?.reason == "conflict")
        let chunks = (png.count + MediaStack.chunkBytes - 1) / MediaStack.chunkBytes
        for index in 1..<chunks { try await media.sendChunk(bo, upload: started.uploadId, png, index: index) }
        let finished = try await media.finish(bo, upload: started.uploadId)
        let twice = try await media.finish(bo, upload: started.uploadId)
        #expect(finished == twice)
        #expect(finished.width == 60)

        let wrongHash = try await media.begin(bo, png, type: "image/png", sha256: String(repeating: "ab", count: 32))
        for index in 0..<chunks { try await media.sendChunk(bo, upload: wrongHash.uploadId, png, index: index) }
        let mismatch = await rpcError { _ = try await media.finish(bo, upload: wrongHash.uploadId) }
        #expect(mismatch?.reason == "validation" && mismatch?.field == "sha256")
        #expect(try !media.partFiles().contains("\(wrongHash.uploadId).part"))
    }

    /// A client that retries a finish it thought lost (or sends it twice) gets the one medium
    /// every time, also from a finish that arrives while the first moves the file into place.
    @Test("finishes of one upload sent one after another while the first runs all return its medium")
    func overlappingFinishes() async throws {
        let media = try await MediaStack.shared()
        let uma = try await media.stack.makeUser("retrier")
        let movie = MediaFixtures.movie(durationMs: 1000, width: 64, height: 48, payload: 1 << 20)
        let started = try await media.begin(uma, movie, type: "video/mp4")
        let chunks = (movie.count + MediaStack.chunkBytes - 1) / MediaStack.chunkBytes
        for index in 0..<chunks { _ = try await media.sendChunk(uma, upload: started.uploadId, movie, index: index) }
        let outcomes = await withTaskGroup(of: String.self) { group in
            for attempt in 0..<40 {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(attempt))
                    do {
                        return try await media.finish(uma, upload: started.uploadId).id.description
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(outcomes) == [started.uploadId], "\(Set(outcomes))")
    }

    @Test("identical files are stored once")
    func deduplicates() async throws {
        let media = try await MediaStack.shared()
        let (cy, di) = (try await media.stack.makeUser("cy"), try await media.stack.makeUser("di"))
        let png = MediaFixtures.png(width: 17, height: 9, seed: 77)
        let one = try await media.upload(cy, png, type: "image/png")
        let two = try await media.upload(di, png, type: "image/png")
        #expect(one.id != two.id)
        let hash = MediaFixtures.sha256Hex(png)
        #expect(try media.objectFiles().filter { $0 == hash }.count == 1)
    }

    @Test("an upload interrupted by a crashed instance is resumed on another and finished")
    func resumesAfterACrash() async throws {
        let media = try await MediaStack.shared()
        let eve = try await media.stack.makeUser("eve")
        let movie = MediaFixtures.movie(durationMs: 4000, width: 160, height: 90, payload: 6 * MediaStack.chunkBytes)
        let chunks = (movie.count + MediaStack.chunkBytes - 1) / MediaStack.chunkBytes
        let doomed = try await media.stack.startExtraInstance("media")
        let doomedClient = RPCClient(configuration: .init(addresses: [doomed.rpcAddress]), logger: .init(label: "doomed"))
        let started = try await media.begin(eve, movie, type: "video/mp4", on: doomedClient)
        for index in stride(from: 0, to: chunks, by: 2) {
            try await media.sendChunk(eve, upload: started.uploadId, movie, index: index, on: doomedClient)
        }
        doomed.kill()
        _ = await doomed.waitForExit()
        await doomedClient.shutdown()

        // The remaining chunks, and one sent again, go to the stack's own instance.
        try await media.sendChunk(eve, upload: started.uploadId, movie, index: 0)
        for index in stride(from: 1, to: chunks, by: 2) { try await media.sendChunk(eve, upload: started.uploadId, movie, index: index) }
        let finished = try await media.finish(eve, upload: started.uploadId)
        #expect(finished.durationMs == 4000 && finished.byteSize == Int64(movie.count))
        let fetched = try await HTTPProbe.get(port: media.adminPort, MediaStack.target(of: finished.url))
        #expect(fetched.status == 200 && fetched.body == movie)
    }

    @Test("a finish cut short by a crash after storing the content, before recording the medium, is finished when retried")
    func finishRetriedAfterACrashMidway() async throws {
        let media = try await MediaStack.shared()
        let gil = try await media.stack.makeUser("gil")
        let png = MediaFixtures.png(width: 33, height: 21, seed: 213)
        let hash = MediaFixtures.sha256Hex(png)
        #expect(try !media.objectFiles().contains(hash))
        let doomed = try await media.stack.startExtraInstance("media")
        let doomedClient = RPCClient(configuration: .init(addresses: [doomed.rpcAddress]), logger: .init(label: "doomed"))
        let started = try await media.begin(gil, png, type: "image/png", on: doomedClient)
        for index in 0..<((png.count + MediaStack.chunkBytes - 1) / MediaStack.chunkBytes) {
            try await media.sendChunk(gil, upload: started.uploadId, png, index: index, on: doomedClient)
        }
        // While a medium of the same id is being inserted (and then rolled back), the doomed instance's
        // finish stores the content and then waits to record its medium: it is killed there.
        try await holdingTransaction(
            """
            INSERT INTO media.items (id, owner_id, purpose, content_type, byte_size, sha256)
            VALUES ($1, $2, 'tweet', 'image/png', 1, 'held')
            """,
            [Int64(started.uploadId)!, gil.id.value], on: media.stack.database, commit: false
        ) {
            let finishing = Task { try? await media.finish(gil, upload: started.uploadId, on: doomedClient) }
            let stored = try await eventually(timeout: .seconds(20), interval: .milliseconds(20)) { try media.objectFiles().contains(hash) }
            #expect(stored)
            doomed.kill()
            _ = await doomed.waitForExit()
            _ = await finishing.value
        }
        await doomedClient.shutdown()

        let finished = try await media.finish(gil, upload: started.uploadId)
        #expect(finished.width == 33 && finished.height == 21 && finished.byteSize == Int64(png.count))
        let fetched = try await HTTPProbe.get(port: media.adminPort, MediaStack.target(of: finished.url))
        #expect(fetched.status == 200 && fetched.body == png)
    }

    @Test("an expired upload is swept: its part and its row go, and it takes no more chunks")
    func expiredUploadsAreSwept() async throws {
        let media = try await MediaStack.shared()
        let fay = try await media.stack.makeUser("fay")
        let hasty = try await media.stack.startExtraInstance(
            "media", environment: ["AVIARY_MEDIA_UPLOAD_EXPIRY_SECONDS": "2", "AVIARY_MEDIA_SWEEP_INTERVAL_SECONDS": "1"])
        let client = RPCClient(configuration: .init(addresses: [hasty.rpcAddress]), logger: .init(label: "hasty"))
        defer {
            hasty.terminate()
            Task { await client.shutdown() }
        }
        let png = MediaFixtures.png(width: 60, height: 40, seed: 9)
        let started = try await media.begin(fay, png, type: "image/png", on: client)
        try await media.sendChunk(fay, upload: started.uploadId, png, index: 0, on: client)
        #expect(try media.partFiles().contains("\(started.uploadId).part"))

        _ = try await eventually(timeout: .seconds(20), interval: .milliseconds(200)) {
            try !media.partFiles().contains("\(started.uploadId).part")
        }
        #expect(try !media.partFiles().contains("\(started.uploadId).part"))
        let rows = try await media.stack.database.query(
            "SELECT count(*) FROM media.uploads WHERE id = $1", [Int64(started.uploadId)!])
        #expect(try rows[0].decode(Int64.self, at: 0) == 0)
        let late = await rpcError { try await media.sendChunk(fay, upload: started.uploadId, png, index: 1) }
        #expect(late?.reason == "not_found")
    }

    @Test("stored content no medium holds is swept: a deletion's file its crash left, a stray file; held content stays, old or not")
    func orphanContentIsSwept() async throws {
        let media = try await MediaStack.shared()
        let gus = try await media.stack.makeUser("gus")
        let (kept, dropped) = (
            try await media.upload(gus, MediaFixtures.png(width: 41, height: 17, seed: 31), type: "image/png"),
            try await media.upload(gus, MediaFixtures.png(width: 43, height: 19, seed: 32), type: "image/png")
        )
        func object(of medium: Media) async throws -> String {
            let rows = try await media.stack.database.query("SELECT sha256 FROM media.items WHERE id = $1", [medium.id.value])
            let sha256 = try rows[0].decode(String.self, at: 0)
            return "\(media.root)/objects/\(sha256.prefix(2))/\(sha256)"
        }
        let (keptFile, droppedFile) = (try await object(of: kept), try await object(of: dropped))
        // A crash between the deletion's commit and its unlink: the row goes, the file stays.
        try await media.stack.database.execute("DELETE FROM media.items WHERE id = $1", [dropped.id.value])
        let stray = String(repeating: "ab", count: 32)
        try FileManager.default.createDirectory(atPath: "\(media.root)/objects/ab", withIntermediateDirectories: true)
        let strayFile = "\(media.root)/objects/ab/\(stray)"
        try Data("nobody's".utf8).write(to: URL(fileURLWithPath: strayFile))
        let hourAgo = Date().addingTimeInterval(-3600)
        for file in [keptFile, droppedFile, strayFile] {
            try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: file)
        }

        let sweeping = try await media.stack.startExtraInstance("media", environment: ["AVIARY_MEDIA_ORPHAN_SWEEP_SECONDS": "1"])
        defer { sweeping.terminate() }
        let gone = await eventually(timeout: .seconds(20), interval: .milliseconds(200)) {
            !FileManager.default.fileExists(atPath: droppedFile) && !FileManager.default.fileExists(atPath: strayFile)
        }
        #expect(gone)
        #expect(FileManager.default.fileExists(atPath: keptFile))
        let fetched = try await HTTPProbe.get(port: media.adminPort, MediaStack.target(of: kept.url))
        #expect(fetched.status == 200)
    }
}

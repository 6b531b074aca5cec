import ArgumentParser
import AviaryJSON
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import RPC
import ServiceKit

/// `aviary bench media`: upload throughput over JSON-RPC chunks and `GET /media/<id>` throughput
/// of a running media service (with auth, to register the uploading user unless --token is given).
struct MediaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "media",
        abstract: """
            media.uploadChunk throughput on loopback (target ≥ 100 MiB/s); GET /media/<id> of a 100 KiB image with \
            32 connections (target ≥ 5,000 requests/s).
            """,
        discussion: """
            Uploads a synthetic MP4 (real boxes, random media data) in the chunk size the service asks for, with several \
            chunks in flight; the chunks' base64 is prepared before the clock starts, so the figure is the service's and \
            the transport's. Then uploads a 100 KiB PNG-headed image and fetches it over keep-alive HTTP/1.1 connections. \
            Each run stores new content under the service's media root.
            """)

    @Option(help: "The media service (host:port); default AVIARY_MEDIA_ADDRESSES or 127.0.0.1:7107.")
    var address: String?

    @Option(help: "The auth service (host:port), to register the bench user; default AVIARY_AUTH_ADDRESSES or 127.0.0.1:7101.")
    var authAddress: String?

    @Option(help: "Where GET /media/<id> is served; default AVIARY_MEDIA_PUBLIC_URL or http://127.0.0.1:7207.")
    var httpURL: String?

    @Option(help: "An access token to upload with, instead of registering a user.")
    var token: String?

    @Option(name: .customLong("upload-mib"), help: "MiB uploaded in the throughput run (at most 100, the video limit).")
    var uploadMiB = 64

    @Option(help: "Chunks in flight (one connection each).")
    var inFlight = 8

    @Option(help: "HTTP connections in the GET run.")
    var connections = 32

    @Option(help: "Seconds of GET requests.")
    var seconds = 5

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .media)
        var rpcConfiguration = RPCClient.Configuration(addresses: [address ?? configuration.addresses(of: .media)[0]])
        rpcConfiguration.connectionsPerAddress = inFlight
        rpcConfiguration.callTimeout = .seconds(30)
        let media = RPCClient(configuration: rpcConfiguration, logger: Logger(label: "bench"))
        defer { Task { await media.shutdown() } }
        var token = self.token
        if token == nil { token = try await registerUser(configuration) }
        let meta = RequestMeta(token: token)

        let movie = BenchFiles.movie(bytes: max(1, min(uploadMiB, 100)) << 20)
        let statements = BenchStatements()
        defer { Task { await statements.close() } }
        let before = try? await statements.total()
        let uploaded = try await BenchUpload.upload(movie, type: "video/mp4", inFlight: inFlight, media: media, meta: meta)
        let seconds = uploaded.seconds
        let mebibytes = Double(movie.count) / Double(1 << 20)
        print(
            String(format: "media upload, %.0f MiB in chunks, \(inFlight) in flight:  ", mebibytes)
                + String(format: "%.1f MiB/s  (%.2f s; target ≥ 100 MiB/s)", mebibytes / seconds, seconds))
        print(await statements.perCall(since: before, calls: uploaded.calls) + " (\(uploaded.calls) calls: begin, chunks, finish)")

        let image = BenchFiles.image(bytes: 100 * 1024)
        let stored = try await BenchUpload.upload(image, type: "image/png", media: media, meta: meta).media
        let base = httpURL ?? configuration.value("AVIARY_MEDIA_PUBLIC_URL") ?? "http://127.0.0.1:7207"
        guard let url = URL(string: base), let host = url.host else { throw ValidationError("--http-url must be http://host:port") }
        let figures = try await HTTPLoad(host: host, port: url.port ?? 80, path: "/media/\(stored.id)", expectedBytes: image.count)
            .run(connections: connections, duration: .seconds(self.seconds))
        print("GET /media/<id> (100 KiB), \(connections) connections:  \(figures.summary)   (target ≥ 5,000 requests/s)")
    }

    private func registerUser(_ configuration: ServiceConfiguration) async throws -> String {
        struct Registered: Decodable { var accessToken: String }
        let auth = RPCClient(
            configuration: .init(addresses: [authAddress ?? configuration.addresses(of: .auth)[0]]), logger: Logger(label: "bench"))
        defer { Task { await auth.shutdown() } }
        let name = "bench_" + String(UInt32.random(in: .min ... .max), radix: 16)
        do {
            return try await auth.call(
                "auth.register",
                params: ["email": "\(name)@bench.invalid", "password": "bench-\(UUID().uuidString)", "username": name, "fullname": "Bench \(name)"],
                as: Registered.self
            ).accessToken
        } catch let error as RPCError where error.reason == "rate_limited" {
            throw ValidationError("auth refused to register a user (\(error.message)); pass --token")
        }
    }
}

/// A file uploaded through media's chunked upload (`media.beginUpload`, `uploadChunk`,
/// `finishUpload`) for a tweet, as apps upload them.
enum BenchUpload {
    private struct Started: Decodable {
        var uploadId: String
        var chunkBytes: Int
    }

    struct Stored: Decodable {
        var id: String
    }

    /// Uploads `bytes` with `inFlight` chunks at a time; the time runs from the first chunk to the finish.
    static func upload(_ bytes: [UInt8], type: String, inFlight: Int = 1, media: RPCClient, meta: RequestMeta) async throws
        -> (media: Stored, seconds: Double, calls: Int)
    {
        let started = try await media.call(
            "media.beginUpload",
            params: ["contentType": JSONValue.string(type), "byteSize": .int(Int64(bytes.count)), "purpose": "tweet"],
            meta: meta, as: Started.self)
        let chunkParams = try stride(from: 0, to: bytes.count, by: started.chunkBytes).map { offset in
            let piece = Data(bytes[offset..<min(bytes.count, offset + started.chunkBytes)])
            return try RawJSON(encoding: [
                "uploadId": JSONValue.string(started.uploadId), "offset": .int(Int64(offset)),
                "data": .string(piece.base64EncodedString()),
            ])
        }
        let lanes = max(1, inFlight)
        let clock = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in stride(from: lane, to: chunkParams.count, by: lanes) {
                        _ = try await media.send("media.uploadChunk", params: chunkParams[index], meta: meta).result()
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try await media.call(
            "media.finishUpload", params: ["uploadId": JSONValue.string(started.uploadId)], meta: meta, as: Stored.self)
        // The calls of the upload: begin, the chunks, finish.
        return (stored, GraphBench.seconds(ContinuousClock.now - clock), chunkParams.count + 2)
    }
}

/// Synthetic files that pass media's content checks.
enum BenchFiles {
    /// An MP4 of `bytes` bytes: `ftyp`, a minimal `moov/mvhd`, and random media data.
    static func movie(bytes: Int) -> [UInt8] {
        var mvhd: [UInt8] = [0, 0, 0, 0] + be32(0) + be32(0) + be32(1000) + be32(60_000) + be32(0x10000) + [1, 0]
        mvhd += [UInt8](repeating: 0, count: 10 + 36 + 24) + be32(2)
        let head = box("ftyp", Array("isom".utf8) + be32(0x200) + Array("isommp41".utf8)) + box("moov", box("mvhd", mvhd))
        return head + box("mdat", random(bytes - head.count - 8))
    }

    /// A PNG signature and header followed by `bytes` of random data in an IDAT chunk.
    static func image(bytes: Int) -> [UInt8] {
        let header = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + Array("IHDR".utf8) + be32(256) + be32(100)
            + [8, 2, 0, 0, 0] + be32(0)
        return header + be32(UInt32(bytes - header.count - 12)) + Array("IDAT".utf8) + random(bytes - header.count - 12) + be32(0)
    }

    private static func box(_ type: String, _ content: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + content.count)) + Array(type.utf8) + content
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: count - 7, by: 8) {
                raw.storeBytes(of: generator.next(), toByteOffset: index, as: UInt64.self)
            }
        }
        return bytes
    }
}

/// Keep-alive HTTP/1.1 GETs of one path over several connections, one request at a time on each.
private struct HTTPLoad {
    let host: String
    let port: Int
    let path: String
    let expectedBytes: Int

    func run(connections: Int, duration: Duration) async throws -> LoadFigures {
        var channels: [NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>] = []
        for _ in 0..<connections { channels.append(try await connect()) }
        let start = ContinuousClock.now
        let deadline = start.advanced(by: duration)
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for channel in channels {
                group.addTask { try await self.load(channel, until: deadline) }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        return LoadFigures(calls: latencies.count, seconds: GraphBench.seconds(ContinuousClock.now - start), latencies: latencies)
    }

    private func load(
        _ channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, until deadline: ContinuousClock.Instant
    ) async throws -> [Duration] {
        try await channel.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            var latencies: [Duration] = []
            let request = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: ["host": host])
            while ContinuousClock.now < deadline {
                let began = ContinuousClock.now
                try await outbound.write(contentsOf: [.head(request), .end(nil)])
                var status = HTTPResponseStatus.ok
                var received = 0
                reading: while true {
                    switch try await responses.next() {
                    case .head(let head)?: status = head.status
                    case .body(let piece)?: received += piece.readableBytes
                    case .end?: break reading
                    case nil: throw ValidationError("the server closed the connection")
                    }
                }
                guard status == .ok, received == expectedBytes else {
                    throw ValidationError("GET \(path) answered \(status.code) with \(received) bytes")
                }
                latencies.append(ContinuousClock.now - began)
            }
            return latencies
        }
    }

    private func connect() async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
    }
}

import AviaryAPI
import HTTPTypes
import Hummingbird
import NIOCore

/// Mastodon's streaming over HTTP: `GET /api/v1/streaming/user`, `/user/notification`,
/// `/hashtag?tag=`, `/public` and `/public/local` (with `only_media`), `/list?list=`, `/direct`, as server-sent events (`event: update`, `data: <the entity as JSON>`), the
/// same ``MastodonFeeds`` as the WebSocket's. A comment line every ``heartbeat`` keeps proxies
/// from closing a quiet response.
extension MastodonAPI {
    static let heartbeat = Duration.seconds(15)

    func addStreamingRoutes(to router: Router<EdgeContext>) {
        let paths = [
            ("api/v1/streaming/user", "user"), ("api/v1/streaming/user/notification", "user:notification"),
            ("api/v1/streaming/hashtag", "hashtag"), ("api/v1/streaming/public", "public"),
            ("api/v1/streaming/public/local", "public:local"), ("api/v1/streaming/list", "list"),
            ("api/v1/streaming/direct", "direct"),
        ]
        for (path, name) in paths {
            endpoint(router, .get, RouterPath(path), access: .user, scope: "read:statuses") { call, context in
                let media = name.hasPrefix("public") && call.params.flag("only_media") == true ? ":media" : ""
                guard let stream = MastodonFeeds.Stream(name: name + media, tag: call.params["tag"], list: call.params["list"]) else {
                    if name == "list" { throw MastodonError.validation("list", "must be the id of one of your lists") }
                    throw MastodonError.validation("tag", "must be a hashtag of 1 to 100 letters, digits or _")
                }
                guard await MastodonFeeds.accepts(stream, gateway: gateway, caller: call.caller) else { throw MastodonError.notFound }
                return try events(call, stream, closed: context.channel.closeFuture)
            }
        }
    }

    /// The response's side of the events.
    private struct ServerSentEvents: MastodonEventSink {
        let continuation: AsyncStream<ByteBuffer>.Continuation

        func send(_ event: String, stream: MastodonFeeds.Stream, payload: String) {
            continuation.yield(ByteBuffer(string: "event: \(event)\ndata: \(payload)\n\n"))
        }

        func close(_ reason: MastodonFeeds.Ending) {
            continuation.finish()
        }
    }

    /// The stream as a response that lasts until the client leaves (`closed`: the connection's
    /// end) or the session ends; it counts among the user's sockets while it lasts.
    private func events(_ call: Call, _ stream: MastodonFeeds.Stream, closed: EventLoopFuture<Void>) throws -> Response {
        guard let grant = call.grant, let user = grant.userID, let token = call.token else { throw MastodonError.invalidToken }
        guard !gateway.socketsPerUser.isFull(user) else {
            throw MastodonError(status: .tooManyRequests, message: GatewayService.tooManySockets(ofUser: gateway.socketsPerUser.limit))
        }
        let (gateway, address, renderer) = (gateway, call.caller.address, call.renderer)
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // Started as the body is written, so that a response never written holds nothing.
            guard gateway.socketsPerUser.claim(user) else { return try await writer.finish(nil) }
            let (events, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(1024))
            closed.whenComplete { _ in continuation.finish() }
            let feeds = MastodonFeeds(
                gateway: gateway, token: token, grant: grant, address: address, renderer: renderer,
                sink: ServerSentEvents(continuation: continuation))
            feeds.follow(stream)
            let beat = Task {
                while !Task.isCancelled {
                    continuation.yield(ByteBuffer(string: ":thump\n\n"))
                    try? await Task.sleep(for: Self.heartbeat)
                }
            }
            do {
                for await chunk in events { try await writer.write(chunk) }
            } catch {
                // The client left: what it held ends below.
            }
            beat.cancel()
            continuation.finish()
            await feeds.end()
            gateway.socketsPerUser.release(user)
            try? await writer.finish(nil)
        })
    }
}

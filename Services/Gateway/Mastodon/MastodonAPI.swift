import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import RPC
import ServiceKit

/// The Mastodon client API (docs/mastodon.md), served by the gateway and answered by the services:
/// each endpoint checks the caller's Mastodon token and its scopes, then calls the services as the
/// token's Aviary session, and shapes their answer as Mastodon's entities.
struct MastodonAPI: Sendable {
    let gateway: GatewayService
    let tokens: MastodonTokens
    let markers: MarkerStore
    /// The limits the instance endpoints announce, as the tweets and media services read them.
    let tweetLimit: Int
    let maxImageBytes: Int
    let maxVideoBytes: Int
    let statusCache: StatusCache

    init(gateway: GatewayService) throws {
        self.gateway = gateway
        tokens = gateway.mastodonTokens
        markers = MarkerStore(postgres: gateway.resources.postgres)
        let configuration = gateway.resources.configuration
        tweetLimit = try configuration.integer("AVIARY_TWEETS_MAX_LENGTH", default: TextRules.tweetLimit, in: 1...10_000)
        maxImageBytes = try configuration.integer("AVIARY_MEDIA_MAX_IMAGE_BYTES", default: 16 << 20, in: 1...(1 << 40))
        maxVideoBytes = try configuration.integer("AVIARY_MEDIA_MAX_VIDEO_BYTES", default: 100 << 20, in: 1...(1 << 40))
        statusCache = StatusCache(capacity: try configuration.integer("AVIARY_GATEWAY_STATUS_CACHE", default: 5_000, in: 0...10_000_000))
    }

    /// Who may call an endpoint.
    enum Access {
        /// Anyone; a token, when sent, must be valid and hold the scope.
        case everyone
        /// A token of a user holding the scope.
        case user
    }

    /// One call of an endpoint, as its handler sees it.
    struct Call: Sendable {
        let request: Request
        /// The query's and the body's parameters.
        let params: MastodonParams
        let grant: MastodonGrant?
        /// The Mastodon token the call came with.
        let token: String?
        /// The caller's address, and the Aviary access token the services are called with.
        let caller: EdgeCaller
        let renderer: MastodonRenderer

        /// The signed-in user (endpoints of ``Access/user`` always have one).
        var userID: Int64 { grant?.userID ?? 0 }

        /// The `:name` part of the path as an id; not found when it is not one.
        func pathID(_ context: EdgeContext, _ name: String = "id") throws(MastodonError) -> EntityID {
            guard let id = context.parameters.get(name).flatMap(MastodonParams.id) else { throw .notFound }
            return EntityID(id)
        }
    }

    func addRoutes(to router: Router<EdgeContext>) {
        addOAuthRoutes(to: router)
        addInstanceRoutes(to: router)
        addAccountRoutes(to: router)
        addSafetyRoutes(to: router)
        addStatusRoutes(to: router)
        addTimelineRoutes(to: router)
        addMediaRoutes(to: router)
        addNotificationRoutes(to: router)
        addMarkerRoutes(to: router)
        addListRoutes(to: router)
        addPushRoutes(to: router)
        addSearchRoutes(to: router)
        addNeutralRoutes(to: router)
        addStreamingRoutes(to: router)
        // What the adapter does not serve answers as Mastodon answers an unknown record, in JSON.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            router.on("api/**", method: method) { _, _ in MastodonError.notFound.response }
        }
    }

    /// Adds the endpoint `method path`, open to `access` with `scope` (a sub-scope such as
    /// `read:statuses`, whose parent also grants it).
    func endpoint(
        _ router: Router<EdgeContext>, _ method: HTTPRequest.Method, _ path: RouterPath, access: Access, scope: String,
        _ handle: @escaping @Sendable (Call, EdgeContext) async throws -> Response
    ) {
        router.on(path, method: method) { request, context in
            await answering(context, route: "\(path)") {
                try await handle(try await admit(request, context, access: access, scope: scope), context)
            }
        }
    }

    /// What `body` answers, or its error answered as Mastodon does (``MastodonError``); an error no
    /// branch expected (a Postgres failure, say) is logged and answered 500.
    func answering(_ context: EdgeContext, route: String, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as MastodonError {
            return error.response
        } catch let error as RPCError {
            return MastodonError(error).response
        } catch is NIOTooManyBytesError {
            return MastodonError(status: .contentTooLarge, message: "The request body is too large").response
        } catch {
            context.logger.error("a Mastodon API call failed", metadata: ["http.route": "\(route)", "error": "\(error)"])
            return MastodonError(status: .internalServerError, message: "An internal error occurred").response
        }
    }

    /// Takes a call from the edge's limits of the caller's address and user (`AVIARY_GATEWAY_CALLS_PER_*`).
    func takeLimit(address: String?, user: Int64?) async throws(MastodonError) {
        guard let outcome = await gateway.limits.take(address: address, user: user, cost: 1), !outcome.allowed else { return }
        throw MastodonError(status: .tooManyRequests, message: "Too many requests", headers: EdgeResponses.limitHeaders(outcome))
    }

    /// Checks the token, its scope and the edge's limits, and reads the parameters.
    private func admit(_ request: Request, _ context: EdgeContext, access: Access, scope: String) async throws -> Call {
        let edge = gateway.caller(of: request, peer: context.peer)
        var grant: MastodonGrant?
        if let token = edge.token {
            let granted = try await tokens.grant(for: token)
            guard granted.scopes.allows(scope) else { throw MastodonError.outsideScopes }
            grant = granted
        }
        if access == .user {
            guard let grant else { throw MastodonError.invalidToken }
            guard grant.userID != nil else { throw MastodonError.userRequired }
        }
        try await takeLimit(address: edge.address, user: grant?.userID)
        var params = MastodonParams(form: request.uri.query ?? "")
        if request.method != .get, MediaUpload.mediaType(request.headers[.contentType] ?? "") != "multipart/form-data" {
            params = params.merging(try await Self.bodyParams(request, limit: gateway.settings.maxBodyBytes))
        }
        return Call(
            request: request, params: params, grant: grant, token: edge.token,
            caller: EdgeCaller(token: grant?.accessToken, address: edge.address),
            renderer: MastodonRenderer(origin: origin(of: request)))
    }

    func origin(of request: Request) -> String {
        gateway.publicOrigin(host: request.head.authority)
    }

    /// A form or JSON body's parameters.
    static func bodyParams(_ request: Request, limit: Int) async throws -> MastodonParams {
        let body = try await request.body.collect(upTo: limit)
        guard body.readableBytes > 0 else { return MastodonParams() }
        if MediaUpload.mediaType(request.headers[.contentType] ?? "") == "application/json" {
            guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)) else {
                throw MastodonError(status: .badRequest, message: "The request body is not valid JSON")
            }
            return try MastodonParams(json: json)
        }
        return MastodonParams(form: String(buffer: body))
    }

    /// Calls `method` for `call`'s caller and decodes its result.
    func call<Params, Result>(_ method: RPCMethod<Params, Result>, _ params: Params, _ call: Call) async throws -> Result {
        try await gateway.forwarder.call(method, params, for: call.caller)
    }
}

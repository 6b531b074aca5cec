import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import RPC
import ServiceKit

/// DeathStarBench's social network HTTP API, served as its nginx front serves it, so that its own
/// `init_social_graph.py` and wrk2 Lua scripts run against Aviary unchanged
/// (`AVIARY_GATEWAY_DSB_COMPAT=1`). Its calls carry no token: the adapter registers an Aviary
/// account for each of its users and acts for them (``DSBAccounts``).
struct DSBAdapter: Sendable {
    let gateway: GatewayService
    let accounts: DSBAccounts

    func addRoutes(to router: Router<EdgeContext>) {
        router.post("wrk2-api/user/register") { request, context in
            try await answer(request, context) { form, caller in
                guard let id = form.integer("user_id"), let username = form["username"], let password = form["password"] else {
                    throw DSBRefusal.incomplete
                }
                let fullname = "\(form["first_name"] ?? "") \(form["last_name"] ?? "")".trimmingCharacters(in: .whitespaces)
                _ = try await accounts.register(
                    dsbID: id, username: username, password: password, fullname: fullname.isEmpty ? username : fullname,
                    caller: caller)
                return text("Success! User \(username) is registered")
            }
        }
        for (path, method) in [("wrk2-api/user/follow", GraphAPI.follow.name), ("wrk2-api/user/unfollow", GraphAPI.unfollow.name)] {
            router.post(RouterPath(path)) { request, context in
                try await answer(request, context) { form, caller in
                    let (follower, followee): (DSBAccounts.Account?, DSBAccounts.Account?)
                    if let user = form.integer("user_id"), let other = form.integer("followee_id") {
                        (follower, followee) = (try await accounts.account(dsbID: user), try await accounts.account(dsbID: other))
                    } else if let user = form["user_name"], let other = form["followee_name"] {
                        (follower, followee) = (try await accounts.account(username: user), try await accounts.account(username: other))
                    } else {
                        throw DSBRefusal.incomplete
                    }
                    guard let follower, let followee else { throw DSBRefusal.unknownUser }
                    _ = try await act(as: follower, .socialGraph, method, ["userId": String(followee.userID)], caller: caller)
                    return text("Success!")
                }
            }
        }
        router.post("wrk2-api/post/compose") { request, context in
            try await answer(request, context) { form, caller in
                guard let id = form.integer("user_id"), form["username"] != nil, form["post_type"] != nil, let body = form["text"] else {
                    throw DSBRefusal.incomplete
                }
                guard let author = try await accounts.account(dsbID: id) else { throw DSBRefusal.unknownUser }
                _ = try await act(as: author, .tweets, TweetsAPI.create.name, ["text": body], caller: caller)
                return text("Successfully upload post")
            }
        }
        for (path, method) in [("wrk2-api/home-timeline/read", TimelineAPI.home.name), ("wrk2-api/user-timeline/read", TimelineAPI.user.name)] {
            router.get(RouterPath(path)) { request, context in
                try await answer(request, context) { _, caller in
                    let query = request.uri.queryParameters
                    guard let id = query["user_id"].flatMap({ Int64($0) }), let start = query["start"].flatMap({ Int($0) }),
                        let stop = query["stop"].flatMap({ Int($0) }), start >= 0, stop >= start
                    else { throw DSBRefusal.incomplete }
                    guard let reader = try await accounts.account(dsbID: id) else { throw DSBRefusal.unknownUser }
                    let posts = try await timeline(method, of: reader, from: start, to: min(stop, start + 1000), caller: caller)
                    return EdgeResponses.json(try JSONEncoder().encode(posts), headers: [.contentType: "application/json; charset=utf-8"])
                }
            }
        }
    }

    /// Entries `start..<stop` of a timeline, newest first, read in pages of up to 100.
    private func timeline(
        _ method: String, of reader: DSBAccounts.Account, from start: Int, to stop: Int, caller: EdgeCaller
    ) async throws -> [DSBPost] {
        struct Page: Decodable {
            var items: [DSBTweet]
            var nextCursor: String?
        }
        var tweets: [DSBTweet] = []
        var cursor: String?
        repeat {
            var params: [String: String] = ["limit": String(min(100, stop - tweets.count))]
            if method == TimelineAPI.user.name { params["userId"] = String(reader.userID) }
            if let cursor { params["cursor"] = cursor }
            let page = try await act(as: reader, .timeline, method, params, caller: caller, numericLimit: true).decode(Page.self)
            tweets += page.items
            cursor = page.nextCursor
        } while tweets.count < stop && cursor != nil
        guard start < tweets.count else { return [] }
        var posts: [DSBPost] = []
        for tweet in tweets[start..<min(stop, tweets.count)] { posts.append(await post(tweet)) }
        return posts
    }

    /// A tweet shaped as DeathStarBench's post: users by its ids where the adapter knows them.
    private func post(_ tweet: DSBTweet) async -> DSBPost {
        func user(_ summary: DSBTweet.User) async -> DSBPost.User {
            var dsbID: Int64?
            if let userID = Int64(summary.id) { dsbID = await accounts.dsbID(ofUser: userID) }
            let id = dsbID.map(String.init) ?? summary.id
            return DSBPost.User(user_id: id, username: summary.username)
        }
        var mentions: [DSBPost.User] = []
        for mention in tweet.mentions { mentions.append(await user(mention)) }
        let text = tweet.text ?? ""
        let urls = text.split(separator: " ").filter { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
            .map { DSBPost.URLEntry(shortened_url: String($0), expanded_url: String($0)) }
        let milliseconds = Self.milliseconds(tweet.createdAt)
        return DSBPost(
            post_id: tweet.id, creator: await user(tweet.author), req_id: "0", text: text, user_mentions: mentions, media: [],
            urls: urls, timestamp: milliseconds, post_type: 0)
    }

    /// Calls `method` as `account` through the services (the gateway's own path for calls).
    private func act(
        as account: DSBAccounts.Account, _ service: ServiceName, _ method: String, _ params: [String: String], caller: EdgeCaller,
        numericLimit: Bool = false
    ) async throws -> RawJSON {
        var json: [String: JSONValue] = params.mapValues { .string($0) }
        if numericLimit, let limit = params["limit"].flatMap({ Int64($0) }) { json["limit"] = .int(limit) }
        let token = try await accounts.token(of: account)
        return try await gateway.forwarder.call(
            service, method, params: try RawJSON(encoding: JSONValue.object(json)), for: EdgeCaller(token: token, address: caller.address)
        ).get()
    }

    /// Reads the form, applies the edge's limits, and answers as DeathStarBench's front does: the
    /// handler's text, or 400 for missing arguments and 500 with the reason for a failure.
    private func answer(
        _ request: Request, _ context: EdgeContext, _ handle: (DSBForm, EdgeCaller) async throws -> Response
    ) async throws -> Response {
        let caller = gateway.caller(of: request, peer: context.peer)
        let outcome = await gateway.limits.take(address: caller.address, user: nil, cost: 1)
        if let outcome, !outcome.allowed {
            return EdgeResponses.failure(EdgeLimits.refusal(outcome), headers: EdgeResponses.limitHeaders(outcome))
        }
        let body = try await request.body.collect(upTo: gateway.settings.maxBodyBytes)
        do {
            return try await handle(DSBForm(String(buffer: body)), caller)
        } catch DSBRefusal.incomplete {
            return Response(status: .badRequest, body: .init(byteBuffer: ByteBuffer(string: "Incomplete arguments\n")))
        } catch DSBRefusal.unknownUser {
            return Response(status: .internalServerError, body: .init(byteBuffer: ByteBuffer(string: "no such user\n")))
        } catch {
            let message = (error as? RPCError)?.message ?? "\(error)"
            return Response(status: .internalServerError, body: .init(byteBuffer: ByteBuffer(string: "failure: \(message)\n")))
        }
    }

    private func text(_ line: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: line + "\n")))
    }

    private static func milliseconds(_ rfc3339: String) -> String {
        RFC3339.parse(rfc3339).map { String($0.millisecondsSince1970) } ?? "0"
    }
}

enum DSBRefusal: Error {
    case incomplete
    case unknownUser
}

/// The parts of a tweet the adapter shows.
struct DSBTweet: Decodable {
    struct User: Decodable {
        var id: String
        var username: String
    }

    var id: String
    var author: User
    var text: String?
    var createdAt: String
    var mentions: [User]
}

/// A post as DeathStarBench's front returns it (its field names).
struct DSBPost: Encodable {
    struct User: Encodable {
        var user_id: String
        var username: String
    }

    struct URLEntry: Encodable {
        var shortened_url: String
        var expanded_url: String
    }

    struct Media: Encodable {
        var media_id: String
        var media_type: String
    }

    var post_id: String
    var creator: User
    var req_id: String
    var text: String
    var user_mentions: [User]
    var media: [Media]
    var urls: [URLEntry]
    var timestamp: String
    var post_type: Int
}

/// An `application/x-www-form-urlencoded` body as DeathStarBench sends it: its scripts do not
/// escape the text, so a value that does not decode is taken as written.
struct DSBForm {
    private var values: [String: String] = [:]

    init(_ body: String) {
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = Self.decode(parts[0])
            values[key] = parts.count > 1 ? Self.decode(parts[1]) : ""
        }
    }

    subscript(key: String) -> String? {
        values[key].flatMap { $0.isEmpty ? nil : $0 }
    }

    func integer(_ key: String) -> Int64? {
        self[key].flatMap { Int64($0) }
    }

    private static func decode(_ raw: Substring) -> String {
        let spaced = raw.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

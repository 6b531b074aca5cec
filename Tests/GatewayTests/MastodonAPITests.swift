import AviaryJSON
import Crypto
import Foundation
import Postgres
import Testing
import TestSupport

/// The Mastodon client API served by the gateway, over HTTP as Mastodon apps call it, in front of
/// the real services.
@Suite("Mastodon API", .serialized)
struct MastodonAPITests {
    @Test("errors are Mastodon's JSON: unknown paths, missing and invalid tokens, bad ids")
    func errors() async throws {
        let edge = try await GatewayStack.shared()
        let app = try await MastodonClient.register(edge.url)
        let unknown = try await app.get("/api/v1/nothing/here")
        #expect(unknown.status == 404 && unknown.json == ["error": "Record not found"], "\(unknown.text)")
        #expect(unknown.header("Content-Type")?.hasPrefix("application/json") == true)
        let anonymous = try await app.get("/api/v1/timelines/home")
        #expect(anonymous.status == 401 && anonymous.json == ["error": "The access token is invalid"])
        let forged = try await app.get("/api/v1/timelines/home", token: "not-a-token")
        #expect(forged.status == 401 && forged.json == ["error": "The access token is invalid"])
        let badID = try await app.get("/api/v1/statuses/12x")
        #expect(badID.status == 404 && badID.json == ["error": "Record not found"])
        let noStatus = try await app.get("/api/v1/statuses/123456")
        #expect(noStatus.status == 404 && noStatus.json == ["error": "Record not found"])
    }

    @Test("apps and the password grant; scopes are checked on every endpoint; app tokens act for no user")
    func passwordGrantAndScopes() async throws {
        let edge = try await GatewayStack.shared()
        let alice = try await edge.register("alice")
        let missing = try await MastodonClient.form("POST", edge.url + "/api/v1/apps", ["redirect_uris": MastodonClient.outOfBand])
        #expect(missing.status == 422 && missing.json["error"]?.stringValue?.contains("client_name") == true, "\(missing.text)")
        let badScope = try await MastodonClient.form(
            "POST", edge.url + "/api/v1/apps", ["client_name": "x", "redirect_uris": MastodonClient.outOfBand, "scopes": "read admin:all"])
        #expect(badScope.status == 422 && badScope.json["error"]?.stringValue?.contains("scopes") == true)

        let app = try await MastodonClient.register(edge.url)
        let wrongPassword = try await app.token(["grant_type": "password", "username": alice.username, "password": "nope nope nope"])
        #expect(wrongPassword.status == 400 && wrongPassword.json["error"] == "invalid_grant")
        let wrongSecret = try await MastodonClient(url: edge.url, clientID: app.clientID, clientSecret: "x").token(
            ["grant_type": "password", "username": alice.username, "password": "correct horse battery"])
        #expect(wrongSecret.status == 401 && wrongSecret.json["error"] == "invalid_client")
        let beyond = try await app.token(["grant_type": "password", "username": alice.username, "password": "correct horse battery", "scope": "push"])
        #expect(beyond.status == 400 && beyond.json["error"] == "invalid_scope")

        let granted = try await app.token(["grant_type": "password", "username": alice.username, "password": "correct horse battery", "scope": "read write"])
        #expect(granted.json["token_type"] == "Bearer" && granted.json["scope"] == "read write")
        let token = try #require(granted.json["access_token"]?.stringValue)
        let me = try await app.get("/api/v1/accounts/verify_credentials", token: token)
        #expect(me.status == 200 && me.json["id"]?.stringValue == alice.id && me.json["username"]?.stringValue == alice.username)
        #expect(me.json["source"]?["privacy"] == "public" && me.json["acct"]?.stringValue == alice.username)

        let reader = try await app.signIn(alice, scope: "read:statuses")
        let refused = try await app.send("POST", "/api/v1/statuses", ["status": "not allowed"], token: reader)
        #expect(refused.status == 403 && refused.json == ["error": "This action is outside the authorized scopes"])
        let outside = try await app.get("/api/v1/accounts/verify_credentials", token: reader)
        #expect(outside.status == 403)
        #expect(try await app.get("/api/v1/timelines/home", token: reader).status == 200)

        let appToken = try #require(try await app.token(["grant_type": "client_credentials", "scope": "read"]).json["access_token"]?.stringValue)
        let account = try await app.get("/api/v1/accounts/\(alice.id)", token: appToken)
        #expect(account.status == 200 && account.json["username"]?.stringValue == alice.username)
        let noUser = try await app.get("/api/v1/accounts/verify_credentials", token: appToken)
        #expect(noUser.status == 422 && noUser.json == ["error": "This method requires an authenticated user"])
    }

    @Test("the authorization-code flow: the sign-in page, PKCE S256, single-use codes, the out-of-band page")
    func authorizationCode() async throws {
        let edge = try await GatewayStack.shared()
        let bob = try await edge.register("bob")
        let redirect = "https://app.example/callback"
        let app = try await MastodonClient.register(edge.url, redirect: redirect)
        let verifier = "a-verifier-of-enough-length-0123456789-abcdefghijk"
        let challenge = Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let query = [
            "response_type": "code", "client_id": app.clientID, "redirect_uri": redirect, "scope": "read write",
            "state": "xyz", "code_challenge": challenge, "code_challenge_method": "S256",
        ]
        let page = try await EdgeHTTP.send("GET", edge.url + "/oauth/authorize?" + Self.query(query))
        #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true && page.text.contains("<form"))
        let elsewhere = try await EdgeHTTP.send(
            "GET", edge.url + "/oauth/authorize?" + Self.query(query.merging(["redirect_uri": "https://evil.example/"]) { $1 }))
        #expect(elsewhere.status == 400 && elsewhere.header("Location") == nil)

        let wrong = try await MastodonClient.form("POST", edge.url + "/oauth/authorize", query.merging(["login": bob.username, "password": "wrong password"]) { $1 })
        #expect(wrong.status == 401 && wrong.text.contains("Invalid user name or password"))
        func code() async throws -> String {
            let signedIn = try await MastodonClient.form(
                "POST", edge.url + "/oauth/authorize", query.merging(["login": bob.username, "password": "correct horse battery"]) { $1 })
            #expect(signedIn.status == 302)
            let location = try #require(signedIn.header("Location").flatMap(URLComponents.init(string:)))
            #expect(location.host == "app.example" && location.queryItems?.first { $0.name == "state" }?.value == "xyz")
            return try #require(location.queryItems?.first { $0.name == "code" }?.value)
        }
        let first = try await code()
        let badVerifier = try await app.token(["grant_type": "authorization_code", "code": first, "redirect_uri": redirect, "code_verifier": "x" + verifier])
        #expect(badVerifier.status == 400 && badVerifier.json["error"] == "invalid_grant")
        let spent = try await app.token(["grant_type": "authorization_code", "code": first, "redirect_uri": redirect, "code_verifier": verifier])
        #expect(spent.status == 400, "a code is spent by its first exchange, even a failed one")

        let second = try await code()
        let exchanged = try await app.token(["grant_type": "authorization_code", "code": second, "redirect_uri": redirect, "code_verifier": verifier])
        #expect(exchanged.status == 200 && exchanged.json["scope"] == "read write", "\(exchanged.text)")
        let token = try #require(exchanged.json["access_token"]?.stringValue)
        #expect(try await app.get("/api/v1/accounts/verify_credentials", token: token).json["username"]?.stringValue == bob.username)
        let again = try await app.token(["grant_type": "authorization_code", "code": second, "redirect_uri": redirect, "code_verifier": verifier])
        #expect(again.status == 400 && again.json["error"] == "invalid_grant")

        let plain = try await EdgeHTTP.send(
            "GET", edge.url + "/oauth/authorize?" + Self.query(query.merging(["code_challenge_method": "plain"]) { $1 }))
        #expect(plain.status == 400 && plain.text.contains("S256"))
        let noRedirect = try await app.token(["grant_type": "authorization_code", "code": try await code(), "code_verifier": verifier])
        #expect(noRedirect.status == 400, "the exchange names the redirect_uri the code was issued for")

        let named = try await MastodonClient.form(
            "POST", edge.url + "/api/v1/apps", ["client_name": "<script>alert(1)</script>", "redirect_uris": MastodonClient.outOfBand])
        let namedID = try #require(named.json["client_id"]?.stringValue)
        let escaped = try await EdgeHTTP.send("GET", edge.url + "/oauth/authorize?" + Self.query(["response_type": "code", "client_id": namedID]))
        #expect(escaped.status == 200 && escaped.text.contains("&lt;script&gt;") && !escaped.text.contains("<script>"))
        #expect(escaped.header("X-Frame-Options") == "DENY")

        let oobApp = try await MastodonClient.register(edge.url)
        let oob = try await MastodonClient.form(
            "POST", edge.url + "/oauth/authorize",
            ["response_type": "code", "client_id": oobApp.clientID, "redirect_uri": MastodonClient.outOfBand, "login": bob.username,
             "password": "correct horse battery"])
        #expect(oob.status == 200 && oob.text.contains("<code>"))
    }

    @Test("refresh_token and revoke; a token whose access token expired is renewed from its session")
    func refreshRevokeRenew() async throws {
        let edge = try await GatewayStack.shared()
        let carol = try await edge.register("carol")
        let app = try await MastodonClient.register(edge.url)
        let granted = try await app.token(["grant_type": "password", "username": carol.username, "password": "correct horse battery"])
        let (token, refresh) = (try #require(granted.json["access_token"]?.stringValue), try #require(granted.json["refresh_token"]?.stringValue))

        // A gateway with nothing cached, and the session's access token expired in the table.
        let fresh = try await edge.extraGateway([:])
        defer { fresh.process.kill() }
        let digest = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
        try await edge.stack.database.execute(
            "UPDATE gateway.mastodon_tokens SET access_expires = now() - interval '1 minute' WHERE token_hash = $1", [digest])
        let before = try await edge.stack.database.query("SELECT access_token FROM gateway.mastodon_tokens WHERE token_hash = $1", [digest])
        let renewedHere = MastodonClient(url: fresh.url, clientID: app.clientID, clientSecret: app.clientSecret)
        #expect(try await renewedHere.get("/api/v1/accounts/verify_credentials", token: token).status == 200)
        let after = try await edge.stack.database.query(
            "SELECT access_token, access_expires > now() FROM gateway.mastodon_tokens WHERE token_hash = $1", [digest])
        #expect(try after.first?.decode(String.self, at: 0) != before.first?.decode(String.self, at: 0))
        #expect(try after.first?.decode(Bool.self, at: 1) == true)

        let other = try await MastodonClient.register(edge.url)
        let foreign = try await MastodonClient.form(
            "POST", edge.url + "/oauth/revoke", ["client_id": other.clientID, "client_secret": other.clientSecret, "token": token])
        #expect(foreign.status == 403)
        let exchanged = try await app.token(["grant_type": "refresh_token", "refresh_token": refresh])
        let renewed = try #require(exchanged.json["access_token"]?.stringValue, "\(exchanged.text)")
        // Another instance may believe a token it resolved for up to 30 s; this one forgot it at once.
        #expect(try await app.get("/api/v1/accounts/verify_credentials", token: token).status == 401)
        #expect(try await app.get("/api/v1/accounts/verify_credentials", token: renewed).status == 200)
        #expect(try await app.token(["grant_type": "refresh_token", "refresh_token": refresh]).json["error"] == "invalid_grant")

        let revoked = try await MastodonClient.form(
            "POST", edge.url + "/oauth/revoke", ["client_id": app.clientID, "client_secret": app.clientSecret, "token": renewed])
        #expect(revoked.status == 200)
        #expect(try await app.get("/api/v1/accounts/verify_credentials", token: renewed).status == 401)
    }

    @Test("statuses: post (HTML content, Idempotency-Key), read, context, favourite, favourited_by, delete; refusals")
    func statuses() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("alice", "bob")
        let ((alice, aliceToken), (bob, bobToken)) = (people[0], people[1])

        let text = "Hi @\(bob.username) & <friends>, see https://example.com/a?b=1 #Aviary\n\nsecond paragraph"
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": text], token: aliceToken, headers: ["Idempotency-Key": "k-1"])
        #expect(posted.status == 200, "\(posted.text)")
        let status = posted.json
        let id = try #require(status["id"]?.stringValue)
        let content = try #require(status["content"]?.stringValue)
        #expect(content.hasPrefix("<p>Hi <span class=\"h-card\" translate=\"no\"><a href=\"\(edge.url)/@\(bob.username)\" class=\"u-url mention\">@<span>\(bob.username)</span></a></span> &amp; &lt;friends&gt;"), "\(content)")
        #expect(content.contains(#"<a href="https://example.com/a?b=1" target="_blank" rel="nofollow noopener noreferrer" translate="no">https://example.com/a?b=1</a>"#))
        #expect(content.contains(#"<a href="\#(edge.url)/tags/aviary" class="mention hashtag" rel="tag">#<span>Aviary</span></a></p><p>second paragraph</p>"#))
        #expect(status["account"]?["id"]?.stringValue == alice.id && status["visibility"] == "public" && status["reblog"] == .null)
        #expect(status["mentions"]?.arrayValue?.first?["acct"]?.stringValue == bob.username && status["tags"]?.arrayValue?.first?["name"] == "aviary")
        let again = try await app.send("POST", "/api/v1/statuses", ["status": text], token: aliceToken, headers: ["Idempotency-Key": "k-1"])
        #expect(again.json["id"]?.stringValue == id, "the same Idempotency-Key posts once")

        let blank = try await app.send("POST", "/api/v1/statuses", ["status": ""], token: aliceToken)
        #expect(blank.status == 422 && blank.json["error"]?.stringValue?.contains("status") == true)
        let direct = try await app.send("POST", "/api/v1/statuses", ["status": "psst", "visibility": "direct"], token: aliceToken)
        #expect(direct.status == 422 && direct.json["error"]?.stringValue?.contains("not supported") == true)
        let poll = try await EdgeHTTP.send(
            "POST", edge.url + "/api/v1/statuses", body: Data(#"{"status":"vote","poll":{"options":["a","b"],"expires_in":600}}"#.utf8),
            headers: ["Authorization": "Bearer \(aliceToken)", "Content-Type": "application/json"])
        #expect(poll.status == 422 && poll.json["error"]?.stringValue?.contains("poll") == true, "\(poll.text)")
        let tooLong = try await app.send("POST", "/api/v1/statuses", ["status": String(repeating: "x", count: 700)], token: aliceToken)
        #expect(tooLong.status == 422 && tooLong.json["error"]?.stringValue?.hasPrefix("Validation failed") == true)

        let reply = try await app.send("POST", "/api/v1/statuses", ["status": "@\(alice.username) hello", "in_reply_to_id": id], token: bobToken)
        let replyID = try #require(reply.json["id"]?.stringValue)
        #expect(reply.json["in_reply_to_id"]?.stringValue == id && reply.json["in_reply_to_account_id"]?.stringValue == alice.id)
        let context = try await app.get("/api/v1/statuses/\(replyID)/context")
        #expect(context.json["ancestors"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [id])
        let below = try await app.get("/api/v1/statuses/\(id)/context", token: bobToken)
        #expect(below.json["descendants"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [replyID])

        let liked = try await app.send("POST", "/api/v1/statuses/\(id)/favourite", token: bobToken)
        #expect(liked.json["favourited"] == true && liked.json["favourites_count"] == 1)
        #expect(try await app.get("/api/v1/statuses/\(id)", token: bobToken).json["favourited"] == true)
        let likers = try await app.get("/api/v1/statuses/\(id)/favourited_by")
        #expect(likers.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [bob.id], "\(likers.text)")
        #expect(try await app.get("/api/v1/statuses/1234567/favourited_by").status == 404)
        let unliked = try await app.send("POST", "/api/v1/statuses/\(id)/unfavourite", token: bobToken)
        #expect(unliked.json["favourited"] == false && unliked.json["favourites_count"] == 0)

        let notTheirs = try await app.send("DELETE", "/api/v1/statuses/\(id)", token: bobToken)
        #expect(notTheirs.status == 403 && notTheirs.json == ["error": "This action is not allowed"])
        let deleted = try await app.send("DELETE", "/api/v1/statuses/\(id)", token: aliceToken)
        #expect(deleted.status == 200 && deleted.json["text"]?.stringValue == text)
        #expect(try await app.get("/api/v1/statuses/\(id)").status == 404)
    }

    @Test("timelines: home, tag and public pages with max_id, since_id, min_id, limit and Link headers")
    func timelines() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("dora", "eve")
        let ((dora, doraToken), (_, eveToken)) = (people[0], people[1])
        #expect(try await app.send("POST", "/api/v1/accounts/\(dora.id)/follow", token: eveToken).json["following"] == true)
        let tag = "t" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        var ids: [String] = []
        for number in 0..<5 {
            let posted = try await app.send("POST", "/api/v1/statuses", ["status": "number \(number) #\(tag)"], token: doraToken)
            ids.append(try #require(posted.json["id"]?.stringValue))
        }
        let newest = Array(ids.reversed())
        func page(_ query: String) async throws -> (ids: [String], link: String) {
            let reply = try await app.get("/api/v1/timelines/home?" + query, token: eveToken)
            #expect(reply.status == 200, "\(reply.text)")
            return (reply.json.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [], reply.header("Link") ?? "")
        }
        #expect(await eventually { (try? await page("limit=5").ids) == newest })
        let first = try await page("limit=2")
        #expect(first.ids == Array(newest[0..<2]))
        #expect(first.link.contains("<\(edge.url)/api/v1/timelines/home?limit=2&max_id=\(newest[1])>; rel=\"next\""), "\(first.link)")
        #expect(first.link.contains("min_id=\(newest[0])>; rel=\"prev\""))
        #expect(try await page("limit=2&max_id=\(newest[1])").ids == Array(newest[2..<4]))
        #expect(try await page("limit=2&since_id=\(newest[4])").ids == Array(newest[0..<2]), "since_id: the newest")
        #expect(try await page("limit=2&min_id=\(newest[4])").ids == Array(newest[2..<4]), "min_id: just after it")
        #expect(try await page("max_id=\(newest[0])&since_id=\(newest[3])").ids == Array(newest[1..<3]))
        let badLimit = try await app.get("/api/v1/timelines/home?limit=500", token: eveToken)
        #expect(badLimit.status == 422 && badLimit.json["error"]?.stringValue?.contains("limit") == true)
        // The statuses of entries rendered before are not rendered again (StatusCache); a status
        // that changed is another entry: eve's favourite shows at once, on the page and on its own.
        let gateway = edge.stack.process("gateway")
        let hits = try gateway.metric(#"aviary_gateway_status_cache_total{result="hit"}"#)
        #expect(try await page("limit=5").ids == newest)
        #expect(try gateway.metric(#"aviary_gateway_status_cache_total{result="hit"}"#) >= hits + 5)
        let before = try await app.get("/api/v1/timelines/home?limit=1", token: eveToken).json.arrayValue?.first
        #expect(before?["favourited"] == false && before?["favourites_count"] == 0)
        #expect(try await app.send("POST", "/api/v1/statuses/\(newest[0])/favourite", token: eveToken).json["favourited"] == true)
        let after = try await app.get("/api/v1/timelines/home?limit=1", token: eveToken).json.arrayValue?.first
        #expect(after?["favourited"] == true && after?["favourites_count"] == 1 && after?["id"]?.stringValue == newest[0])

        // Read anonymously, a tag's page may come from a streaming replica up to the replica window
        // behind (AVIARY_TEST_TOPOLOGY=cluster).
        var tagged = try await app.get("/api/v1/timelines/tag/\(tag)?limit=3")
        _ = await eventually {
            tagged = (try? await app.get("/api/v1/timelines/tag/\(tag)?limit=3")) ?? tagged
            return tagged.json.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(newest[0..<3])
        }
        #expect(tagged.json.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(newest[0..<3]), "\(tagged.text)")
        #expect(tagged.header("Link")?.contains("max_id=\(newest[2])") == true)

        // The public timeline, anonymously too: every status, newest first. The other tests post
        // meanwhile, so pages are read from just above the newest of the five, and only these are
        // compared. No status is remote.
        func publicIDs(_ query: String) async throws -> [String] {
            let reply = try await app.get("/api/v1/timelines/public?" + query)
            #expect(reply.status == 200, "\(reply.text)")
            return reply.json.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        let above = String(try #require(Int64(newest[0])) + 1)
        #expect(await eventually { (try? await publicIDs("limit=40&local=true&max_id=\(above)").filter(ids.contains)) == newest })
        let older = try await publicIDs("limit=40&max_id=\(newest[1])")
        #expect(older.allSatisfy { Int64($0)! < Int64(newest[1])! } && older.filter(ids.contains).first == newest[2])
        #expect(try await publicIDs("remote=true").isEmpty)
        #expect(try await publicIDs("only_media=true&limit=40").allSatisfy { !ids.contains($0) })
        #expect(try await app.get("/api/v1/timelines/public?limit=41").status == 422)
    }

    @Test("accounts: lookup, profile, statuses, followers with Link, follow and relationships, update with an avatar, search")
    func accounts() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("fay", "gus", "hal")
        let ((fay, fayToken), (gus, gusToken), (hal, halToken)) = (people[0], people[1], people[2])

        let lookup = try await app.get("/api/v1/accounts/lookup?acct=@\(fay.username)")
        #expect(lookup.json["id"]?.stringValue == fay.id && lookup.json["url"]?.stringValue == "\(edge.url)/@\(fay.username)")
        #expect(try await app.get("/api/v1/accounts/lookup?acct=\(fay.username)@elsewhere.example").status == 404)
        #expect(try await app.get("/api/v1/accounts/99999999999").status == 404)

        let followed = try await app.send("POST", "/api/v1/accounts/\(fay.id)/follow", token: gusToken)
        #expect(followed.json["id"]?.stringValue == fay.id && followed.json["following"] == true && followed.json["followed_by"] == false)
        _ = try await app.send("POST", "/api/v1/accounts/\(fay.id)/follow", token: halToken)
        let relations = try await app.get("/api/v1/accounts/relationships?id[]=\(gus.id)&id[]=\(hal.id)", token: fayToken)
        #expect(relations.json.arrayValue?.map { $0["followed_by"] } == [true, true], "\(relations.text)")
        let profile = try await app.get("/api/v1/accounts/\(fay.id)", token: gusToken)
        #expect(profile.json["followers_count"] == 2 && profile.json["following_count"] == 0)

        let firstPage = try await app.get("/api/v1/accounts/\(fay.id)/followers?limit=1")
        #expect(firstPage.json.arrayValue?.first?["id"]?.stringValue == hal.id)
        let next = try #require(firstPage.header("Link").flatMap { $0.split(separator: "<").first?.split(separator: ">").first })
        let secondPage = try await EdgeHTTP.send("GET", String(next))
        #expect(secondPage.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [gus.id], "\(secondPage.text)")
        let following = try await app.get("/api/v1/accounts/\(gus.id)/following")
        #expect(following.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [fay.id])
        let unfollowed = try await app.send("POST", "/api/v1/accounts/\(fay.id)/unfollow", token: halToken)
        #expect(unfollowed.json["following"] == false)

        let original = try await app.send("POST", "/api/v1/statuses", ["status": "an original"], token: fayToken)
        let originalID = try #require(original.json["id"]?.stringValue)
        let reply = try await app.send("POST", "/api/v1/statuses", ["status": "a reply", "in_reply_to_id": originalID], token: fayToken)
        let replyID = try #require(reply.json["id"]?.stringValue)
        let all = try await app.get("/api/v1/accounts/\(fay.id)/statuses")
        #expect(all.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [replyID, originalID])
        let withoutReplies = try await app.get("/api/v1/accounts/\(fay.id)/statuses?exclude_replies=true")
        #expect(withoutReplies.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [originalID])
        let taggedID = try #require(try await app.send("POST", "/api/v1/statuses", ["status": "#Birds today"], token: fayToken).json["id"]?.stringValue)
        let tagged = try await app.get("/api/v1/accounts/\(fay.id)/statuses?tagged=birds")
        #expect(tagged.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [taggedID])
        #expect(try await app.get("/api/v1/accounts/\(fay.id)/statuses?pinned=true").json == [])

        let updated = try await app.send(
            "PATCH", "/api/v1/accounts/update_credentials", ["display_name": "Fay F.", "note": "Birds <3"], token: fayToken)
        #expect(updated.json["display_name"] == "Fay F." && updated.json["note"] == "<p>Birds &lt;3</p>" && updated.json["source"]?["note"] == "Birds <3")
        let tooLong = try await app.send("PATCH", "/api/v1/accounts/update_credentials", ["note": String(repeating: "n", count: 161)], token: fayToken)
        #expect(tooLong.status == 422 && tooLong.json["error"]?.stringValue?.contains("note") == true)

        let boundary = "avatar-boundary"
        var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"display_name\"\r\n\r\nFay Avatar\r\n".utf8)
        body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"me.png\"\r\n\r\n".utf8)
        body += Data(MediaFixtures.png(width: 8, height: 8)) + Data("\r\n--\(boundary)--\r\n".utf8)
        let withAvatar = try await EdgeHTTP.send(
            "PATCH", edge.url + "/api/v1/accounts/update_credentials", body: body,
            headers: ["Authorization": "Bearer \(fayToken)", "Content-Type": "multipart/form-data; boundary=\(boundary)"])
        #expect(withAvatar.status == 200 && withAvatar.json["display_name"] == "Fay Avatar", "\(withAvatar.text)")
        let avatar = try #require(withAvatar.json["avatar"]?.stringValue)
        #expect(!avatar.hasSuffix("missing.png") && withAvatar.json["note"] == "<p>Birds &lt;3</p>", "\(avatar)")
        let header = try await app.send("PATCH", "/api/v1/accounts/update_credentials", ["header": "x"], token: fayToken)
        #expect(header.status == 422)

        let found = try await app.get("/api/v1/accounts/search?q=\(fay.username)", token: gusToken)
        #expect(found.json.arrayValue?.first?["id"]?.stringValue == fay.id, "\(found.text)")
    }

    @Test("notifications: Mastodon's types, types[] and exclude_types[], paging, one by id, unread count, grouped (v2), dismiss, clear")
    func notifications() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("jon", "kim")
        let ((jon, jonToken), (kim, kimToken)) = (people[0], people[1])
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "notice me"], token: jonToken)
        let statusID = try #require(posted.json["id"]?.stringValue)
        _ = try await app.send("POST", "/api/v1/accounts/\(jon.id)/follow", token: kimToken)
        _ = try await app.send("POST", "/api/v1/statuses/\(statusID)/favourite", token: kimToken)
        _ = try await app.send("POST", "/api/v1/statuses", ["status": "@\(jon.username) hello", "in_reply_to_id": statusID], token: kimToken)

        var listed: [JSONValue] = []
        #expect(await eventually {
            listed = (try? await app.get("/api/v1/notifications", token: jonToken))?.json.arrayValue ?? []
            return listed.count == 3
        }, "\(listed)")
        #expect(listed.compactMap { $0["type"]?.stringValue } == ["mention", "favourite", "follow"])
        #expect(listed.allSatisfy { $0["account"]?["id"]?.stringValue == kim.id })
        #expect(listed[1]["status"]?["id"]?.stringValue == statusID && listed[2]["status"] == .null)
        let favourites = try await app.get("/api/v1/notifications?types[]=favourite", token: jonToken)
        #expect(favourites.json.arrayValue?.compactMap { $0["type"]?.stringValue } == ["favourite"])
        let noMentions = try await app.get("/api/v1/notifications?exclude_types[]=mention&exclude_types[]=follow", token: jonToken)
        #expect(noMentions.json.arrayValue?.compactMap { $0["type"]?.stringValue } == ["favourite"])
        let unknown = try await app.get("/api/v1/notifications?types[]=nonsense", token: jonToken)
        #expect(unknown.status == 422)

        let first = try await app.get("/api/v1/notifications?limit=1", token: jonToken)
        let newestID = try #require(listed.first?["id"]?.stringValue)
        #expect(first.header("Link")?.contains("max_id=\(newestID)") == true)
        let older = try await app.get("/api/v1/notifications?limit=2&max_id=\(newestID)", token: jonToken)
        #expect(older.json.arrayValue?.compactMap { $0["type"]?.stringValue } == ["favourite", "follow"])
        let one = try await app.get("/api/v1/notifications/\(newestID)", token: jonToken)
        #expect(one.json["id"]?.stringValue == newestID && one.json["type"] == "mention")
        #expect(try await app.get("/api/v1/notifications/\(newestID)", token: kimToken).status == 404, "not Kim's")
        #expect(try await app.get("/api/v1/notifications/unread_count", token: jonToken).json["count"] == 3)

        // Grouped: a second like of the same status joins the first's group.
        let lou = try await edge.register("lou")
        let louToken = try await app.signIn(lou)
        _ = try await app.send("POST", "/api/v1/statuses/\(statusID)/favourite", token: louToken)
        var grouped = JSONValue.null
        #expect(await eventually {
            grouped = (try? await app.get("/api/v2/notifications", token: jonToken))?.json ?? .null
            return grouped["notification_groups"]?.arrayValue?.contains { $0["notifications_count"] == 2 } == true
        }, "\(grouped)")
        let likes = try #require(grouped["notification_groups"]?.arrayValue?.first { $0["type"] == "favourite" })
        #expect(likes["group_key"]?.stringValue == "favourite-\(statusID)" && likes["status_id"]?.stringValue == statusID)
        #expect(Set(likes["sample_account_ids"]?.arrayValue?.compactMap(\.stringValue) ?? []) == [kim.id, lou.id])
        #expect(grouped["statuses"]?.arrayValue?.contains { $0["id"]?.stringValue == statusID } == true)
        #expect(Set(grouped["accounts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []) == [kim.id, lou.id])
        let latestID = try #require(
            (try await app.get("/api/v1/notifications?limit=1", token: jonToken)).json.arrayValue?.first?["id"]?.stringValue)

        #expect(try await app.send("POST", "/api/v1/notifications/\(latestID)/dismiss", token: kimToken).status == 404, "not Kim's")
        let dismissed = try await app.send("POST", "/api/v1/notifications/\(latestID)/dismiss", token: jonToken)
        #expect(dismissed.status == 200 && dismissed.json == [:])
        #expect(try await app.get("/api/v1/notifications/\(latestID)", token: jonToken).status == 404)
        #expect(try await app.get("/api/v1/notifications", token: jonToken).json.arrayValue?.count == 3)
        let reader = try await app.signIn(jon, scope: "read")
        #expect(try await app.send("POST", "/api/v1/notifications/clear", token: reader).status == 403)
        #expect(try await app.send("POST", "/api/v1/notifications/clear", token: jonToken).status == 200)
        #expect(try await app.get("/api/v1/notifications", token: jonToken).json == [])
    }

    @Test("search v2 (accounts, statuses, hashtags, type, offset) and suggestions v2")
    func searchAndSuggestions() async throws {
        let edge = try await GatewayStack.shared()
        let (lea, max, ned) = (try await edge.register("lea"), try await edge.register("max"), try await edge.register("ned"))
        let app = try await MastodonClient.register(edge.url)
        let (leaToken, maxToken) = (try await app.signIn(lea), try await app.signIn(max))
        let word = "w" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "searching for \(word)"], token: leaToken)
        // Another user's search may read a streaming replica (AVIARY_TEST_TOPOLOGY=cluster): it finds
        // the post once the replica has it.
        var found = try await app.get("/api/v2/search?q=\(word)", token: maxToken)
        let postedIDs = [posted.json["id"]?.stringValue].compactMap { $0 }
        _ = await eventually {
            found = (try? await app.get("/api/v2/search?q=\(word)", token: maxToken)) ?? found
            return found.json["statuses"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == postedIDs
        }
        #expect(found.json["statuses"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == postedIDs)
        #expect(found.json["hashtags"]?.arrayValue?.first?["name"]?.stringValue == word)
        let people = try await app.get("/api/v2/search?q=\(lea.username)&type=accounts", token: maxToken)
        #expect(people.json["accounts"]?.arrayValue?.first?["id"]?.stringValue == lea.id && people.json["statuses"] == [])
        let punctuation = try await app.get("/api/v2/search?q=%21%21&type=statuses", token: maxToken)
        #expect(punctuation.status == 200 && punctuation.json["statuses"] == [])
        #expect(try await app.get("/api/v2/search?q=x&type=everything").status == 422)
        #expect(try await app.get("/api/v2/search?q=x&offset=1000").status == 422)

        _ = try await app.send("POST", "/api/v1/accounts/\(lea.id)/follow", token: maxToken)
        _ = try await app.send("POST", "/api/v1/accounts/\(ned.id)/follow", token: leaToken)
        let suggested = try await app.get("/api/v2/suggestions", token: maxToken)
        #expect(suggested.json.arrayValue?.compactMap { $0["account"]?["id"]?.stringValue } == [ned.id], "\(suggested.text)")
    }

    @Test("registration through the API, where enabled, with an app token; the configured public URL in links")
    func registration() async throws {
        let edge = try await GatewayStack.shared()
        let app = try await MastodonClient.register(edge.url, scopes: "read write")
        let appToken = try #require(try await app.token(["grant_type": "client_credentials", "scope": "read write"]).json["access_token"]?.stringValue)
        let username = "m" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let fields = ["username": username, "email": "\(username)@example.com", "password": "correct horse battery", "agreement": "true", "locale": "en"]
        let closed = try await app.send("POST", "/api/v1/accounts", fields, token: appToken)
        #expect(closed.status == 403 && closed.json["error"]?.stringValue?.contains("Registrations") == true)

        let open = try await edge.extraGateway(["AVIARY_GATEWAY_MASTODON_REGISTRATIONS": "1", "AVIARY_GATEWAY_PUBLIC_URL": "https://aviary.example/"])
        defer { open.process.kill() }
        let there = MastodonClient(url: open.url, clientID: app.clientID, clientSecret: app.clientSecret)
        #expect(try await there.send("POST", "/api/v1/accounts", fields, token: nil).status == 401)
        let unagreed = try await there.send("POST", "/api/v1/accounts", fields.merging(["agreement": "false"]) { $1 }, token: appToken)
        #expect(unagreed.status == 422 && unagreed.json["error"]?.stringValue?.contains("agreement") == true)
        let registered = try await there.send("POST", "/api/v1/accounts", fields, token: appToken)
        let token = try #require(registered.json["access_token"]?.stringValue, "\(registered.text)")
        let me = try await there.get("/api/v1/accounts/verify_credentials", token: token)
        #expect(me.json["username"]?.stringValue == username && me.json["url"]?.stringValue == "https://aviary.example/@\(username)", "\(me.text)")
        let taken = try await there.send("POST", "/api/v1/accounts", fields, token: appToken)
        #expect(taken.status == 422 && taken.json["error"]?.stringValue?.hasPrefix("Validation failed") == true)
        #expect(try await there.get("/api/v1/instance").json["registrations"] == true)
    }

    @Test("streaming: stream=user brings new home statuses and notifications; hashtag and public streams by message; refusals")
    func streaming() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("nia", "oz")
        try await SubscriptionTurns.exclusive(edge) { try await stream(edge, app, people) }
    }

    private func stream(_ edge: GatewayStack, _ app: MastodonClient, _ people: [(EdgeUser, String)]) async throws {
        let ((nia, niaToken), (_, ozToken)) = (people[0], people[1])
        _ = try await app.send("POST", "/api/v1/accounts/\(nia.id)/follow", token: ozToken)
        let own = try await app.send("POST", "/api/v1/statuses", ["status": "Oz was here"], token: ozToken)
        let ownID = try #require(own.json["id"]?.stringValue)

        await #expect(throws: (any Error).self) {
            _ = try await TestSocket.open(edge.url, path: "/api/v1/streaming?stream=user&access_token=not-a-token")
        }
        await #expect(throws: (any Error).self) {
            _ = try await TestSocket.open(edge.url, token: ozToken, path: "/api/v1/streaming?stream=public:remote:elsewhere")
        }
        let socket = try await TestSocket.open(edge.url, path: "/api/v1/streaming?stream=user&access_token=\(ozToken)")
        defer { Task { await socket.close() } }
        let tag = "s" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try await socket.send(#"{"type":"subscribe","stream":"hashtag","tag":"\#(tag)"}"#)
        try await socket.send(#"{"type":"subscribe","stream":"public:local"}"#)
        // Aviary keeps no direct statuses: the direct stream is followed and says nothing.
        try await socket.send(#"{"type":"subscribe","stream":"direct"}"#)
        try await Task.sleep(for: .milliseconds(500))

        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "for my followers #\(tag)"], token: niaToken)
        let postedID = try #require(posted.json["id"]?.stringValue)
        _ = try await app.send("POST", "/api/v1/statuses/\(ownID)/favourite", token: niaToken)
        func event(_ name: String, _ stream: JSONValue) -> JSONValue? {
            socket.messages.first { $0["event"]?.stringValue == name && $0["stream"] == stream }
                .flatMap { $0["payload"]?.stringValue }.flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        }
        #expect(await eventually(timeout: .seconds(15)) { event("update", ["user"])?["id"]?.stringValue == postedID }, "\(socket.messages)")
        #expect(await eventually(timeout: .seconds(15)) { event("update", ["hashtag", .string(tag)])?["id"]?.stringValue == postedID })
        // Everyone's new statuses come on the public stream: the one looked for among them.
        #expect(await eventually(timeout: .seconds(15)) {
            socket.messages.contains {
                $0["event"] == "update" && $0["stream"] == ["public:local"]
                    && $0["payload"]?.stringValue.map { $0.contains(#""id":"\#(postedID)""#) } == true
            }
        })
        // Deleted: both streams say so, with the status's id as the payload.
        _ = try await app.send("DELETE", "/api/v1/statuses/\(postedID)", token: niaToken)
        func deleted(_ stream: JSONValue) -> Bool {
            socket.messages.contains { $0["event"] == "delete" && $0["stream"] == stream && $0["payload"]?.stringValue == postedID }
        }
        #expect(
            await eventually(timeout: .seconds(15)) { deleted(["user"]) && deleted(["hashtag", .string(tag)]) && deleted(["public:local"]) },
            "\(socket.messages)")
        #expect(await eventually(timeout: .seconds(15)) {
            let notification = event("notification", ["user"])
            return notification?["type"] == "favourite" && notification?["account"]?["id"]?.stringValue == nia.id
        })
        #expect(try await app.get("/api/v1/streaming/user").status == 401)
        #expect(try await app.get("/api/v1/streaming/direct").status == 401)
        #expect(try await app.get("/api/v1/streaming/hashtag?tag=", token: ozToken).status == 422)
        #expect(!socket.messages.contains { $0["error"] != nil || $0["stream"] == ["direct"] }, "\(socket.messages)")
        try await socket.send(#"{"type":"subscribe","stream":"nothing"}"#)
        #expect(await eventually { socket.messages.contains { $0["error"] == "Unknown stream type" } })
        let direct = try await TestSocket.open(edge.url, path: "/api/v1/streaming?stream=direct&access_token=\(ozToken)")
        await direct.close()
    }

    @Test("lists: create, members, an account's lists, the list timeline and stream, update, delete; another's list is 404")
    func lists() async throws {
        let (edge, app, people) = try await MastodonClient.signedIn("lia", "max")
        try await SubscriptionTurns.exclusive(edge) { try await list(edge, app, people) }
    }

    private func list(_ edge: GatewayStack, _ app: MastodonClient, _ people: [(EdgeUser, String)]) async throws {
        let ((_, liaToken), (max, maxToken)) = (people[0], people[1])
        func ids(_ reply: EdgeHTTP.Reply) -> [String] { reply.json.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
        _ = try await app.send("POST", "/api/v1/accounts/\(max.id)/follow", token: liaToken)
        let made = try await app.send("POST", "/api/v1/lists", ["title": "Friends"], token: liaToken)
        #expect(made.status == 200 && made.json["replies_policy"] == "followed" && made.json["exclusive"] == false, "\(made.text)")
        let list = try #require(made.json["id"]?.stringValue)
        #expect(try await app.send("POST", "/api/v1/lists", ["title": "Only", "exclusive": "true"], token: liaToken).status == 422)
        #expect(try await app.send("POST", "/api/v1/lists", ["replies_policy": "list"], token: liaToken).status == 422)
        // Only whom lia follows: lia herself is refused.
        #expect(try await app.send("POST", "/api/v1/lists/\(list)/accounts", ["account_ids[]": max.id], token: liaToken).json == [:])
        #expect(try await app.send("POST", "/api/v1/lists/\(list)/accounts", ["account_ids[]": people[0].0.id], token: liaToken).status == 422)
        #expect(ids(try await app.get("/api/v1/lists/\(list)/accounts", token: liaToken)) == [max.id])
        #expect(ids(try await app.get("/api/v1/lists/\(list)/accounts?limit=0", token: liaToken)) == [max.id])
        #expect(ids(try await app.get("/api/v1/accounts/\(max.id)/lists", token: liaToken)) == [list])
        #expect(ids(try await app.get("/api/v1/lists", token: liaToken)) == [list])

        let socket = try await TestSocket.open(edge.url, path: "/api/v1/streaming?stream=user&access_token=\(liaToken)")
        defer { Task { await socket.close() } }
        try await socket.send(#"{"type":"subscribe","stream":"list","list":"\#(list)"}"#)
        try await Task.sleep(for: .milliseconds(500))
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "for the list"], token: maxToken)
        let status = try #require(posted.json["id"]?.stringValue)
        #expect(
            await eventually(timeout: .seconds(15)) {
                socket.messages.contains {
                    $0["event"] == "update" && $0["stream"] == ["list", .string(list)]
                        && $0["payload"]?.stringValue?.contains(#""id":"\#(status)""#) == true
                }
            }, "\(socket.messages)")
        #expect(ids(try await app.get("/api/v1/timelines/list/\(list)", token: liaToken)).contains(status))
        let renamed = try await app.send("PUT", "/api/v1/lists/\(list)", ["title": "Close", "replies_policy": "none"], token: liaToken)
        #expect(renamed.json["title"] == "Close" && renamed.json["replies_policy"] == "none", "\(renamed.text)")

        // max reaches none of it; his socket may not follow it.
        for path in ["/api/v1/lists/\(list)", "/api/v1/lists/\(list)/accounts", "/api/v1/timelines/list/\(list)", "/api/v1/streaming/list?list=\(list)"] {
            #expect(try await app.get(path, token: maxToken).status == 404, "\(path)")
        }
        let other = try await TestSocket.open(edge.url, path: "/api/v1/streaming?access_token=\(maxToken)")
        defer { Task { await other.close() } }
        try await other.send(#"{"type":"subscribe","stream":"list","list":"\#(list)"}"#)
        #expect(await eventually { other.messages.contains { $0["error"] == "Invalid list" } })
        #expect(try await app.send("DELETE", "/api/v1/lists/\(list)", token: maxToken).status == 404)
        #expect(try await app.send("DELETE", "/api/v1/lists/\(list)/accounts", ["account_ids[]": max.id], token: liaToken).json == [:])
        #expect(ids(try await app.get("/api/v1/lists/\(list)/accounts", token: liaToken)).isEmpty)
        #expect(try await app.send("DELETE", "/api/v1/lists/\(list)", token: liaToken).json == [:])
        #expect(try await app.get("/api/v1/lists/\(list)", token: liaToken).status == 404)
        #expect(try await app.get("/api/v1/lists", token: liaToken).json == [])
        // The deleted list's stream ends; the socket and its user stream go on.
        let later = try #require(try await app.send("POST", "/api/v1/statuses", ["status": "after the list"], token: maxToken).json["id"]?.stringValue)
        #expect(
            await eventually(timeout: .seconds(15)) {
                socket.messages.contains {
                    $0["event"] == "update" && $0["stream"] == ["user"] && $0["payload"]?.stringValue?.contains(#""id":"\#(later)""#) == true
                }
            }, "\(socket.messages)")
    }

    @Test("favourites page in like order; lists of what Aviary lacks answer Mastodon's neutral values")
    func favouritesAndNeutralLists() async throws {
        let (_, app, people) = try await MastodonClient.signedIn("pam", "quin")
        let ((_, pamToken), (_, quinToken)) = (people[0], people[1])
        var ids: [String] = []
        for number in 0..<3 {
            let posted = try await app.send("POST", "/api/v1/statuses", ["status": "like \(number)"], token: pamToken)
            ids.append(try #require(posted.json["id"]?.stringValue))
        }
        for id in [ids[1], ids[0], ids[2]] { _ = try await app.send("POST", "/api/v1/statuses/\(id)/favourite", token: quinToken) }
        let first = try await app.get("/api/v1/favourites?limit=2", token: quinToken)
        #expect(first.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[2], ids[0]], "\(first.text)")
        let next = try #require(first.header("Link").flatMap { $0.split(separator: "<").first?.split(separator: ">").first })
        let second = try await EdgeHTTP.send("GET", String(next), headers: ["Authorization": "Bearer \(quinToken)"])
        #expect(second.json.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[1]])
        #expect(try await app.get("/api/v1/favourites").status == 401)

        for path in ["/api/v1/custom_emojis", "/api/v2/filters", "/api/v1/domain_blocks", "/api/v1/trends/links"] {
            let reply = try await app.get(path, token: pamToken)
            #expect(reply.status == 200 && reply.json == [], "\(path): \(reply.text)")
        }
        #expect(try await app.get("/api/v1/preferences", token: pamToken).json["posting:default:visibility"] == "public")
        #expect(try await app.get("/api/v1/conversations", token: pamToken).status == 404, "direct messages stay in messaging")
    }

    @Test("markers: home and notifications kept per user with versions; the notifications marker reads them")
    func markers() async throws {
        let (_, app, people) = try await MastodonClient.signedIn("uma", "vic")
        let ((_, umaToken), (_, vicToken)) = (people[0], people[1])
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "mark my words"], token: umaToken)
        let status = try #require(posted.json["id"]?.stringValue)
        _ = try await app.send("POST", "/api/v1/statuses/\(status)/favourite", token: vicToken)
        var newest: String?
        _ = await eventually {
            newest = try? await app.get("/api/v1/notifications", token: umaToken).json.arrayValue?.first?["id"]?.stringValue
            return newest != nil
        }
        let notification = try #require(newest)
        #expect(try await app.get("/api/v1/notifications/unread_count", token: umaToken).json["count"] == 1)
        #expect(try await app.get("/api/v1/markers?timeline[]=home&timeline[]=notifications", token: umaToken).json == [:])

        let set = try await app.send(
            "POST", "/api/v1/markers", ["home[last_read_id]": status, "notifications[last_read_id]": notification], token: umaToken)
        #expect(set.status == 200 && set.json["home"]?["last_read_id"]?.stringValue == status, "\(set.text)")
        #expect(set.json["notifications"]?["version"] == 0 && set.json["home"]?["updated_at"]?.stringValue != nil)
        #expect(try await app.get("/api/v1/notifications/unread_count", token: umaToken).json["count"] == 0)
        let again = try await app.send("POST", "/api/v1/markers", ["home[last_read_id]": status], token: umaToken)
        #expect(again.json["home"]?["version"] == 1 && again.json["notifications"] == nil)
        let read = try await app.get("/api/v1/markers?timeline[]=home&timeline[]=notifications", token: umaToken)
        #expect(read.json["home"]?["version"] == 1 && read.json["notifications"]?["last_read_id"]?.stringValue == notification)
        #expect(try await app.get("/api/v1/markers?timeline[]=notifications", token: umaToken).json["home"] == nil)
        // Each user's own; refusals.
        #expect(try await app.get("/api/v1/markers?timeline[]=home", token: vicToken).json == [:])
        let bad = try await app.send("POST", "/api/v1/markers", ["home[last_read_id]": "soon"], token: umaToken)
        #expect(bad.status == 422 && bad.json["error"]?.stringValue?.contains("home[last_read_id]") == true, "\(bad.text)")
        #expect(try await app.get("/api/v1/markers?timeline[]=home").status == 401)
    }

    @Test("blocks and mutes with their lists, bookmarks, trending tags and a tag's timeline")
    func safetyAndEngagement() async throws {
        let (_, app, people) = try await MastodonClient.signedIn("ria", "sol")
        let ((ria, riaToken), (sol, solToken)) = (people[0], people[1])
        func ids(_ reply: EdgeHTTP.Reply) -> [String] { reply.json.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }

        _ = try await app.send("POST", "/api/v1/accounts/\(sol.id)/follow", token: riaToken)
        let blocked = try await app.send("POST", "/api/v1/accounts/\(sol.id)/block", token: riaToken)
        #expect(blocked.json["blocking"] == true && blocked.json["following"] == false, "\(blocked.text)")
        #expect(ids(try await app.get("/api/v1/blocks", token: riaToken)) == [sol.id])
        #expect(try await app.send("POST", "/api/v1/accounts/\(ria.id)/follow", token: solToken).status == 403)
        // Relationships read later tell it too, from both sides.
        let fromRia = try await app.get("/api/v1/accounts/relationships?id[]=\(sol.id)", token: riaToken).json.arrayValue?.first
        #expect(fromRia?["blocking"] == true && fromRia?["blocked_by"] == false)
        let fromSol = try await app.get("/api/v1/accounts/relationships?id[]=\(ria.id)", token: solToken).json.arrayValue?.first
        #expect(fromSol?["blocked_by"] == true && fromSol?["blocking"] == false)
        let unblocked = try await app.send("POST", "/api/v1/accounts/\(sol.id)/unblock", token: riaToken)
        #expect(unblocked.json["blocking"] == false)
        #expect(ids(try await app.get("/api/v1/blocks", token: riaToken)).isEmpty)

        let muted = try await app.send("POST", "/api/v1/accounts/\(sol.id)/mute", ["notifications": "false", "duration": "3600"], token: riaToken)
        #expect(muted.json["muting"] == true && muted.json["muting_notifications"] == false, "\(muted.text)")
        #expect(ids(try await app.get("/api/v1/mutes", token: riaToken)) == [sol.id])
        let mutedSeen = try await app.get("/api/v1/accounts/relationships?id[]=\(sol.id)", token: riaToken).json.arrayValue?.first
        #expect(mutedSeen?["muting"] == true && mutedSeen?["muting_notifications"] == false)
        #expect(try await app.send("POST", "/api/v1/accounts/\(sol.id)/unmute", token: riaToken).json["muting"] == false)
        #expect(try await app.send("POST", "/api/v1/accounts/\(sol.id)/mute", ["duration": "-1"], token: riaToken).status == 422)
        let reader = try await app.signIn(ria, scope: "read")
        #expect(try await app.send("POST", "/api/v1/accounts/\(sol.id)/block", token: reader).status == 403)

        let tag = "mt" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "tagged #\(tag)"], token: solToken)
        let status = try #require(posted.json["id"]?.stringValue)
        let marked = try await app.send("POST", "/api/v1/statuses/\(status)/bookmark", token: riaToken)
        #expect(marked.json["bookmarked"] == true)
        let bookmarks = try await app.get("/api/v1/bookmarks", token: riaToken)
        #expect(ids(bookmarks) == [status] && bookmarks.json.arrayValue?.first?["bookmarked"] == true)
        #expect(try await app.send("POST", "/api/v1/statuses/\(status)/unbookmark", token: riaToken).json["bookmarked"] == false)
        #expect(ids(try await app.get("/api/v1/bookmarks", token: riaToken)).isEmpty)

        // Read anonymously, a tag's page may come from a streaming replica (AVIARY_TEST_TOPOLOGY=cluster).
        #expect(await eventually { (try? ids(await app.get("/api/v1/timelines/tag/\(tag)"))) == [status] })
        // The suite's other tests post hashtags too: the list is checked for its shape and order.
        var trends = try await app.get("/api/v1/trends/tags?limit=20")
        _ = await eventually {
            trends = (try? await app.get("/api/v1/trends/tags?limit=20")) ?? trends
            return trends.json.arrayValue?.isEmpty == false
        }
        let uses = trends.json.arrayValue?.compactMap { $0["history"]?.arrayValue?.first?["uses"]?.stringValue.flatMap { Int($0) } } ?? []
        #expect(!uses.isEmpty && uses.count == trends.json.arrayValue?.count && uses == uses.sorted(by: >), "\(trends.text)")
        #expect(trends.json.arrayValue?.allSatisfy { $0["url"]?.stringValue?.contains("/tags/") == true } == true)
        #expect(try await app.get("/api/v1/trends/tags?limit=21").status == 422)
    }

    @Test("media: a multipart upload becomes a MediaAttachment a status carries; instance and nodeinfo")
    func mediaAndInstance() async throws {
        let edge = try await GatewayStack.shared()
        let ivy = try await edge.register("ivy")
        let app = try await MastodonClient.register(edge.url)
        let token = try await app.signIn(ivy)
        let boundary = "aviary-boundary"
        var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dot.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += Data(MediaFixtures.png(width: 4, height: 3))
        body += Data("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\na dot\r\n--\(boundary)--\r\n".utf8)
        let uploaded = try await EdgeHTTP.send(
            "POST", edge.url + "/api/v2/media", body: body,
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "multipart/form-data; boundary=\(boundary)"])
        #expect(uploaded.status == 200, "\(uploaded.text)")
        #expect(uploaded.json["type"] == "image" && uploaded.json["meta"]?["original"]?["width"] == 4)
        let mediaID = try #require(uploaded.json["id"]?.stringValue)
        #expect(uploaded.json["description"] == "a dot")
        #expect(try await app.get("/api/v1/media/\(mediaID)", token: token).json["id"]?.stringValue == mediaID)
        // The description and focal point change until the status is posted (media.describe).
        let described = try await app.send("PUT", "/api/v1/media/\(mediaID)", ["description": "a red dot", "focus": "0.5,-0.25"], token: token)
        #expect(described.json["description"] == "a red dot" && described.json["meta"]?["focus"]?["x"] == .double(0.5), "\(described.text)")
        let strangerToken = try await app.signIn(try await edge.register("jay"))
        #expect(try await app.send("PUT", "/api/v1/media/\(mediaID)", ["description": "mine now"], token: strangerToken).status == 404)
        #expect(try await app.send("PUT", "/api/v1/media/\(mediaID)", ["focus": "2,0"], token: token).status == 422)
        let posted = try await app.send("POST", "/api/v1/statuses", ["status": "with a dot", "media_ids[]": mediaID], token: token)
        #expect(posted.json["media_attachments"]?.arrayValue?.first?["id"]?.stringValue == mediaID, "\(posted.text)")
        #expect(posted.json["media_attachments"]?.arrayValue?.first?["description"] == "a red dot")
        let notMultipart = try await app.send("POST", "/api/v2/media", ["file": "x"], token: token)
        #expect(notMultipart.status == 422)

        let v1 = try await app.get("/api/v1/instance")
        #expect(v1.json["version"]?.stringValue?.hasPrefix("4.") == true)
        #expect(v1.json["configuration"]?["statuses"]?["max_characters"] == 600, "the tweets' configured limit")
        let v2 = try await app.get("/api/v2/instance")
        #expect(v2.json["api_versions"]?["mastodon"] == 2 && v2.json["configuration"]?["urls"]?["streaming"] != nil)
        let nodeinfo = try await app.get("/.well-known/nodeinfo")
        let href = try #require(nodeinfo.json["links"]?.arrayValue?.first?["href"]?.stringValue)
        #expect(try await EdgeHTTP.send("GET", href).json["software"]?["name"] == "aviary")
    }

    private static func query(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
    }
}

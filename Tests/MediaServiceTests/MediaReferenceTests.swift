import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import RPC
import TestSupport
import Testing

/// Media ids where other services reference them: tweets, profile images and messages accept only
/// the caller's finished uploads of the right purpose (and conversation), checked through
/// `media.getMany`, and show `Media` objects whose URLs the media service serves.
@Suite("media referenced by tweets, profiles and messages")
struct MediaReferenceTests {
    /// Real auth, social-graph, tweets, messaging and media on a fresh database and Redis database 6.
    private static let started = Task {
        try await ServiceStack.start(["auth", "social-graph", "tweets", "messaging", "media"], redisDatabase: 6)
    }

    private static func stack() async throws -> ServiceStack { try await started.value }

    private struct Started: Decodable {
        var uploadId: String
        var chunkBytes: Int
    }

    /// Begins an upload of `bytes` as `user`; returns its id (also the medium's id once finished).
    private static func begin(
        _ stack: ServiceStack, _ user: StackUser, _ bytes: [UInt8], type: String = "image/png", purpose: String,
        conversation: EntityID? = nil
    ) async throws -> Started {
        var params: [String: JSONValue] = [
            "contentType": .string(type), "byteSize": .int(Int64(bytes.count)), "purpose": .string(purpose),
        ]
        if let conversation { params["conversationId"] = .string(conversation.description) }
        return try await stack.call("media", "media.beginUpload", params, as: user, decoding: Started.self)
    }

    /// Uploads `bytes` as `user` in the chunks media asks for and finishes the upload.
    private static func upload(
        _ stack: ServiceStack, _ user: StackUser, _ bytes: [UInt8], type: String = "image/png", purpose: String,
        conversation: EntityID? = nil
    ) async throws -> Media {
        let started = try await begin(stack, user, bytes, type: type, purpose: purpose, conversation: conversation)
        for offset in stride(from: 0, to: bytes.count, by: started.chunkBytes) {
            let piece = bytes[offset..<min(bytes.count, offset + started.chunkBytes)]
            let _: JSONValue = try await stack.call(
                "media", "media.uploadChunk",
                [
                    "uploadId": .string(started.uploadId), "offset": .int(Int64(offset)),
                    "data": .string(Data(piece).base64EncodedString()),
                ], as: user)
        }
        return try await stack.call(
            "media", "media.finishUpload", ["uploadId": .string(started.uploadId)], as: user, decoding: Media.self)
    }

    /// GETs `url` from the media service's HTTP port.
    private static func fetch(_ stack: ServiceStack, _ url: String) async throws -> HTTPProbe.Response {
        try await HTTPProbe.get(port: stack.process("media").adminPort, MediaStack.target(of: url))
    }

    private static func tweet(_ stack: ServiceStack, _ user: StackUser, media ids: [EntityID]) async throws -> Tweet {
        try await stack.call(
            "tweets", "tweets.create", ["text": "with media", "mediaIds": .array(ids.map { .string($0.description) })],
            as: user, decoding: Tweet.self)
    }

    @Test("a tweet shows the Media it attaches, and its url serves the bytes")
    func tweetMedia() async throws {
        let stack = try await Self.stack()
        let ann = try await stack.makeUser("ann")
        let png = MediaFixtures.png(width: 20, height: 10, seed: 60)
        let media = try await Self.upload(stack, ann, png, purpose: "tweet")

        let created = try await Self.tweet(stack, ann, media: [media.id])
        #expect(created.media == [media])
        #expect(media.url == "\(stack.environment["AVIARY_MEDIA_PUBLIC_URL"]!)/media/\(media.id)")
        #expect(media.contentType == "image/png" && media.byteSize == Int64(png.count))
        #expect(media.width == 20 && media.height == 10)

        let read: Tweet = try await stack.call("tweets", "tweets.get", ["tweetId": .string(created.id.description)])
        #expect(read.media == [media])

        let served = try await Self.fetch(stack, created.media[0].url)
        #expect(served.status == 200 && served.body == png)
        #expect(served.headers["content-type"] == "image/png")
    }

    @Test("a tweet refuses another user's media, an avatar, a message medium, an unfinished upload and an unknown id")
    func tweetRefusals() async throws {
        let stack = try await Self.stack()
        let (bea, cal) = (try await stack.makeUser("bea"), try await stack.makeUser("cal"))
        let png = MediaFixtures.png(width: 4, height: 4, seed: 61)
        let calsTweetMedia = try await Self.upload(stack, cal, png, purpose: "tweet")
        let avatar = try await Self.upload(stack, bea, MediaFixtures.png(width: 5, height: 5, seed: 62), purpose: "avatar")
        let conversation: Conversation = try await stack.call(
            "messaging", "messaging.openDirect", ["userId": cal.idValue], as: bea)
        let messageMedia = try await Self.upload(
            stack, bea, MediaFixtures.png(width: 6, height: 6, seed: 63), purpose: "message", conversation: conversation.id)
        let unfinished = try await Self.begin(stack, bea, MediaFixtures.png(width: 7, height: 7, seed: 64), purpose: "tweet")
        let own = try await Self.upload(stack, bea, MediaFixtures.png(width: 8, height: 8, seed: 65), purpose: "tweet")

        for refused in [
            calsTweetMedia.id, avatar.id, messageMedia.id, EntityID(Int64(unfinished.uploadId)!), EntityID(Int64.max - 7),
        ] {
            let error = await rpcError { _ = try await Self.tweet(stack, bea, media: [own.id, refused]) }
            #expect(error?.reason == "validation" && error?.field == "mediaIds", "\(refused)")
            #expect(error?.message.contains("mediaIds[1]") == true)
        }
        let byBea: Page<Tweet> = try await stack.call("tweets", "tweets.byUser", ["userId": bea.idValue])
        #expect(byBea.items.isEmpty)
    }

    @Test("a profile image must be the caller's finished avatar upload; profileImageUrl then serves it")
    func profileImage() async throws {
        let stack = try await Self.stack()
        let (dan, eve) = (try await stack.makeUser("dan"), try await stack.makeUser("eve"))
        let png = MediaFixtures.png(width: 16, height: 16, seed: 70)
        let avatar = try await Self.upload(stack, dan, png, purpose: "avatar")

        let updated: User = try await stack.call(
            "auth", "auth.updateProfile", ["profileImageId": .string(avatar.id.description)], as: dan)
        let expected = "\(stack.environment["AVIARY_MEDIA_PUBLIC_URL"]!)/media/\(avatar.id)"
        #expect(updated.profileImageUrl == expected)
        let seen: User = try await stack.call("auth", "auth.getUser", ["userId": dan.idValue], as: eve)
        #expect(seen.profileImageUrl == expected)
        let served = try await Self.fetch(stack, expected)
        #expect(served.status == 200 && served.body == png)

        let tweetMedia = try await Self.upload(stack, dan, MediaFixtures.png(width: 3, height: 3, seed: 71), purpose: "tweet")
        let evesAvatar = try await Self.upload(stack, eve, MediaFixtures.png(width: 3, height: 3, seed: 72), purpose: "avatar")
        let unfinished = try await Self.begin(stack, dan, MediaFixtures.png(width: 3, height: 3, seed: 73), purpose: "avatar")
        for refused in [tweetMedia.id, evesAvatar.id, EntityID(Int64(unfinished.uploadId)!), EntityID(Int64.max - 9)] {
            let error = await rpcError {
                let _: User = try await stack.call(
                    "auth", "auth.updateProfile", ["profileImageId": .string(refused.description), "bio": "changed"], as: dan)
            }
            #expect(error?.reason == "validation" && error?.field == "profileImageId", "\(refused)")
        }
        // Nothing of a refused update is kept.
        let after: User = try await stack.call("auth", "auth.me", as: dan)
        #expect(after.profileImageUrl == expected && after.bio != "changed")
        // Left out, the image stays; null removes it.
        let kept: User = try await stack.call("auth", "auth.updateProfile", ["bio": "kept"], as: dan)
        #expect(kept.profileImageUrl == expected && kept.bio == "kept")
        let removed: User = try await stack.call("auth", "auth.updateProfile", ["profileImageId": .null], as: dan)
        #expect(removed.profileImageUrl == nil && removed.bio == "kept")
        let seenAfter: User = try await stack.call("auth", "auth.getUser", ["userId": dan.idValue], as: eve)
        #expect(seenAfter.profileImageUrl == nil)

        let atRegistration = await rpcError {
            let _: JSONValue = try await stack.call(
                "auth", "auth.register",
                [
                    "email": "avatar_first@example.com", "password": "correct horse battery", "username": "avatar_first",
                    "fullname": "Avatar First", "profileImageId": .string(avatar.id.description),
                ])
        }
        #expect(atRegistration?.reason == "validation" && atRegistration?.field == "profileImageId")
        #expect(atRegistration?.message.contains("auth.updateProfile") == true)
    }

    @Test("with the media service unreachable, setting a profile image is unavailable")
    func profileImageWithoutMedia() async throws {
        let stack = try await Self.stack()
        let fay = try await stack.makeUser("fay")
        let avatar = try await Self.upload(stack, fay, MediaFixtures.png(width: 3, height: 3, seed: 74), purpose: "avatar")
        let cutOff = try await stack.startExtraInstance(
            "auth", environment: ["AVIARY_MEDIA_ADDRESSES": "127.0.0.1:\(try freePort())"])
        let client = RPCClient(configuration: .init(addresses: [cutOff.rpcAddress]), logger: Logger(label: "media-reference"))
        let error = await rpcError {
            _ = try await client.call(
                "auth.updateProfile", params: ["profileImageId": JSONValue.string(avatar.id.description)],
                meta: RequestMeta(token: fay.token), as: User.self)
        }
        await client.shutdown()
        cutOff.kill()
        _ = await cutOff.waitForExit()
        #expect(error?.reason == "unavailable")
        let me: User = try await stack.call("auth", "auth.me", as: fay)
        #expect(me.profileImageUrl == nil)
    }

    @Test("a message carries its conversation's medium with a signed url; media of elsewhere is refused")
    func messageMedia() async throws {
        let stack = try await Self.stack()
        let users = try await stack.makeUsers(3, "msg")
        let (gus, hal, ivy) = (users[0], users[1], users[2])
        let withHal: Conversation = try await stack.call("messaging", "messaging.openDirect", ["userId": hal.idValue], as: gus)
        let withIvy: Conversation = try await stack.call("messaging", "messaging.openDirect", ["userId": ivy.idValue], as: gus)
        let png = MediaFixtures.png(width: 9, height: 9, seed: 80)
        let media = try await Self.upload(stack, gus, png, purpose: "message", conversation: withHal.id)

        let sent: Message = try await stack.call(
            "messaging", "messaging.send",
            ["conversationId": .string(withHal.id.description), "mediaId": .string(media.id.description)], as: gus)
        #expect(sent.kind == .image && sent.text == nil)
        let attached = try #require(sent.media)
        #expect(attached.id == media.id && attached.byteSize == Int64(png.count))
        #expect(attached.url.contains("?exp=") && attached.url.contains("&sig="))
        let signed = try await Self.fetch(stack, attached.url)
        #expect(signed.status == 200 && signed.body == png)
        let unsigned = try await HTTPProbe.get(port: stack.process("media").adminPort, "/media/\(media.id)")
        #expect(unsigned.status == 404)

        let history: Page<Message> = try await stack.call(
            "messaging", "messaging.history", ["conversationId": .string(withHal.id.description)], as: hal)
        let shown = try #require(history.items.first?.media)
        #expect(shown.id == media.id && shown.url.contains("&sig="))
        #expect(try await Self.fetch(stack, shown.url).status == 200)

        let tweetMedia = try await Self.upload(stack, gus, MediaFixtures.png(width: 3, height: 3, seed: 81), purpose: "tweet")
        let halsMedia = try await Self.upload(
            stack, hal, MediaFixtures.png(width: 3, height: 3, seed: 82), purpose: "message", conversation: withHal.id)
        let unfinished = try await Self.begin(
            stack, gus, MediaFixtures.png(width: 3, height: 3, seed: 83), purpose: "message", conversation: withHal.id)
        // The medium uploaded for gus and hal's conversation cannot go to gus and ivy's, nor the others anywhere.
        for (conversation, refused) in [
            (withIvy.id, media.id), (withHal.id, tweetMedia.id), (withHal.id, halsMedia.id),
            (withHal.id, EntityID(Int64(unfinished.uploadId)!)),
        ] {
            let error = await rpcError {
                let _: Message = try await stack.call(
                    "messaging", "messaging.send",
                    ["conversationId": .string(conversation.description), "mediaId": .string(refused.description)], as: gus)
            }
            #expect(error?.reason == "validation" && error?.field == "mediaId", "\(refused) in \(conversation)")
        }
        let ivysView: Page<Message> = try await stack.call(
            "messaging", "messaging.history", ["conversationId": .string(withIvy.id.description)], as: ivy)
        #expect(ivysView.items.isEmpty)
    }
}

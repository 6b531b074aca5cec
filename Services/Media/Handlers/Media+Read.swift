import AviaryAPI
import Foundation
import NIOCore
import RPC

extension MediaService {
    @Sendable func get(_ params: MediaParams, _ context: RPCContext) async throws -> Media {
        media(try await visibleRecord(params.mediaId, context))
    }

    @Sendable func read(_ params: ReadParams, _ context: RPCContext) async throws -> ReadResult {
        guard params.offset >= 0 else {
            throw RPCError.validation("offset must not be negative, got \(params.offset)", field: "offset")
        }
        guard (1...MediaSettings.maxReadBytes).contains(params.length) else {
            throw RPCError.validation(
                "length must be from 1 to \(MediaSettings.maxReadBytes) bytes, got \(params.length)", field: "length")
        }
        let record = try await visibleRecord(params.mediaId, context)
        guard params.offset <= record.byteSize else {
            throw RPCError.validation(
                "offset \(params.offset) is beyond the end of the medium (\(record.byteSize) bytes)", field: "offset")
        }
        let count = Int(min(Int64(params.length), record.byteSize - params.offset))
        guard count > 0 else { return ReadResult(data: "") }
        let buffer = try await storage.read(sha256: record.sha256, offset: params.offset, count: count)
        return ReadResult(data: Data(buffer.readableBytesView).base64EncodedString())
    }

    @Sendable func getMany(_ params: GetMediaParams, _ context: RPCContext) async throws -> [Media] {
        let records = try await catalog.records(try params.ids.values(atMost: GetMediaParams.maximum))
        return params.ids.compactMap { id in
            guard let record = records[id.value] else { return nil }
            if let owner = params.ownerId, record.ownerID != owner.value { return nil }
            if let purpose = params.purpose, record.purpose != purpose { return nil }
            if let conversation = params.conversationId, record.conversationID != conversation.value { return nil }
            return media(record)
        }
    }

    /// The finished medium `id` if the caller may see it: public media to anyone, message media to
    /// its uploader and the members of its conversation. Anything else is `not_found`.
    private func visibleRecord(_ id: EntityID, _ context: RPCContext) async throws -> MediaRecord {
        // A caller whose token could not be checked (Redis down) may be one who may see it: not
        // found would be a final, wrong answer, and told apart from unavailable, it would tell
        // which ids are private media.
        let notFound =
            context.tokenUnchecked
            ? RPCError.unavailable("cannot check the session right now; retry shortly")
            : RPCError.notFound("no media has id \(id)")
        guard let record = try await catalog.record(id.value) else { throw notFound }
        guard record.isPrivate else { return record }
        // Without a token too: an error of its own would tell anyone which ids are private media.
        guard let viewer = context.principal?.userID else { throw notFound }
        if viewer == record.ownerID { return record }
        guard let conversation = record.conversationID,
            try await membership.isMember(user: viewer, of: conversation, context: context)
        else { throw notFound }
        return record
    }
}

import AviaryAPI
import Foundation
import RPC
import ServiceKit

extension MediaService {
    /// The longest description, as Mastodon's.
    static let descriptionLimit = 1500

    @Sendable func describe(_ params: DescribeMediaParams, _ context: RPCContext) async throws -> Media {
        let caller = try context.requireUser()
        var description = params.description
        if case .some(.some(let text)) = description {
            let trimmed = try TextRules.text(text, field: "description", allowed: 0...Self.descriptionLimit)
            description = .some(trimmed.isEmpty ? nil : trimmed)
        }
        if case .some(.some(let focus)) = params.focus {
            guard (-1...1).contains(focus.x), (-1...1).contains(focus.y) else {
                throw RPCError.validation("focus x and y must each be -1 to 1, got \(focus.x), \(focus.y)", field: "focus")
            }
        }
        guard let record = try await items.describe(params.mediaId.value, owner: caller, description: description, focus: params.focus) else {
            throw RPCError.notFound("no finished media of yours has the id \(params.mediaId)")
        }
        try await catalog.forget([record.id])
        return media(record)
    }

    @Sendable func discard(_ params: DiscardMediaParams, _ context: RPCContext) async throws -> DiscardedMedia {
        let deletion = try await items.discard(try params.mediaIds.values(atMost: Media.lookupLimit, field: "mediaIds"), owner: params.ownerId.value)
        try await clear(deletion)
        return DiscardedMedia(discarded: deletion.media.count)
    }
}

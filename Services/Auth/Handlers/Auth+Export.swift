import AviaryAPI
import Foundation
import RPC
import ServiceKit

extension AuthService {
    func requestExport(_ params: Empty, context: RPCContext) async throws -> DataExport {
        let caller = try context.requireUser()
        guard try await exports.countToday(of: caller) < 3 else {
            throw RPCError.rateLimited(retryAfterMs: 3_600_000, "at most 3 data exports a day; retry later")
        }
        switch try await exports.request(id: resources.ids.next(), user: caller) {
        case .busy: throw RPCError.conflict("an export of your data is being prepared; auth.exports shows when it is ready")
        case .started(let row): return try await shown(row, context: context)
        }
    }

    func exportList(_ params: Empty, context: RPCContext) async throws -> [DataExport] {
        let caller = try context.requireUser()
        var shownExports: [DataExport] = []
        for row in try await exports.recent(of: caller) { shownExports.append(try await shown(row, context: context)) }
        return shownExports
    }

    /// `row` as its owner sees it: a ready export with a fresh signed URL from media, or, once media
    /// no longer has it (downloaded, or erased), downloaded.
    private func shown(_ row: DataExportStore.Row, context: RPCContext) async throws -> DataExport {
        var export = DataExport(id: EntityID(row.id), status: row.status, createdAt: row.createdAt, readyAt: row.readyAt, byteSize: row.byteSize)
        guard row.status == .ready, let mediaID = row.mediaID else { return export }
        do {
            // Asked as the caller: media shows a private medium to its owner alone.
            let media = try await resources.client(for: .media).call(
                MediaAPI.get.name, params: MediaParams(mediaId: EntityID(mediaID)),
                meta: context.downstreamMeta(token: context.meta.token), idempotent: true, as: Media.self)
            export.url = media.url
            export.expiresAt = URLComponents(string: media.url)?.queryItems?.first { $0.name == "exp" }?.value
                .flatMap(TimeInterval.init).map(Date.init(timeIntervalSince1970:))
        } catch let error as RPCError where error.reason == "not_found" {
            try await exports.downloaded(row.id)
            export.status = .downloaded
        }
        return export
    }
}

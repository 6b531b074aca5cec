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
        return try await shown(try await exports.recent(of: caller), owner: caller, context: context)
    }

    private func shown(_ row: DataExportStore.Row, context: RPCContext) async throws -> DataExport {
        try await shown([row], owner: row.userID, context: context)[0]
    }

    /// `rows` as their owner sees them: a ready export with a fresh signed URL from media (one
    /// `media.getMany` for all), or, once media no longer has it, downloaded (or expired, past its
    /// retention: ``DataExportStore/gone(_:)``).
    private func shown(_ rows: [DataExportStore.Row], owner: Int64, context: RPCContext) async throws -> [DataExport] {
        let ready = rows.filter { $0.status == .ready }.compactMap(\.mediaID)
        let media =
            ready.isEmpty
            ? [:]
            : Dictionary(
                try await resources.peers.media.getMany(
                    GetMediaParams(ids: ready.map { EntityID($0) }, ownerId: EntityID(owner), purpose: .export), context: context
                ).map { ($0.id.value, $0) }, uniquingKeysWith: { first, _ in first })
        // The places of the ready exports media no longer has.
        var gone: [Int] = []
        var shownExports = rows.enumerated().map { index, row in
            var export = DataExport(
                id: EntityID(row.id), status: row.status, createdAt: row.createdAt, readyAt: row.readyAt, byteSize: row.byteSize)
            if row.status == .ready, let mediaID = row.mediaID {
                if let medium = media[mediaID] {
                    export.url = medium.url
                    export.expiresAt = URLComponents(string: medium.url)?.queryItems?.first { $0.name == "exp" }?.value
                        .flatMap(TimeInterval.init).map(Date.init(timeIntervalSince1970:))
                } else {
                    gone.append(index)
                }
            }
            return export
        }
        let marked = try await exports.gone(gone.map { rows[$0].id })
        for index in gone {
            // Marked now, or by the sweep just before (expired).
            shownExports[index].status = marked[rows[index].id] ?? .expired
        }
        return shownExports
    }
}

import AviaryAPI
import AviaryJSON
import Logging
import RPC

extension TimelineService {
    /// A page of hydrated tweets from `candidates` (newest first): asks `tweets.getMany` for the
    /// first `limit`, then for as many more as it left out (deleted since), a few times at most.
    /// `more` says whether older candidates exist beyond the list. `keep`, when given, picks which
    /// of each answer's tweets (the array's bytes, each element's range) the page shows. The tweets
    /// of `shownBefore` (entries of the pages before), and of the candidates an earlier round asked
    /// for, are not shown again, as themselves or as reposts.
    func page(
        of candidates: [Int64], more: Bool, limit: Int, viewer: Int64?, context: RPCContext, shownBefore: [Int64] = [],
        keep: (([UInt8], [Range<Int>]) async throws -> [Range<Int>])? = nil
    ) async throws -> RawJSON {
        var page = PageJSON()
        var consumed = 0
        var rounds = 0
        while page.count < limit, consumed < candidates.count, rounds < 3 {
            let asked = Array(candidates[consumed..<min(consumed + limit - page.count, candidates.count)])
            let array = try await tweets.tweets(
                asked, viewer: viewer, shownBefore: shownBefore + candidates[..<consumed], context: context)
            var elements = try JSONSplice.elements(ofAnswer: array, to: TweetsAPI.getMany.name, logger: context.logger)
            if let keep { elements = try await keep(array, elements) }
            page.reserve(array.count)
            for range in elements { page.append(array[range]) }
            consumed += asked.count
            rounds += 1
        }
        let hasMore = consumed < candidates.count || more
        let next = hasMore && consumed > 0 ? candidates[consumed - 1] : nil
        // The id of the last tweet the page considered (shown, or left out as deleted).
        return page.finish(nextCursor: next.map(KeysetCursor.encodeID))
    }
}

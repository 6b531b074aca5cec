import AviaryJSON
import Foundation

extension RPCRouter {
    /// Calls `method` through this router in this process, as a request on a connection would reach
    /// it: the same decoding of params, the same access checks, the same errors (thrown as
    /// ``RPCError``). How tests exercise a service's handlers without a socket.
    public func call<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, meta: RequestMeta = RequestMeta()
    ) async throws -> Result {
        let frame = try RequestEncoding.request(id: 1, method: method.name, params: RawJSON(encoding: params), meta: meta)
        guard let answer = await respond(to: Data(frame)) else {
            throw RPCError.internalError("\(method.name) answered nothing")
        }
        return try RPCResponse(frame: answer).decode(Result.self)
    }
}

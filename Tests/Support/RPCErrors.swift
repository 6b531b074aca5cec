import RPC

/// The RPC error `body` throws; nil if it succeeds. Any other error comes back as an `internalError`
/// that names it, so a test expecting success or a particular code sees what was thrown instead.
public func rpcError(_ body: () async throws -> Void) async -> RPCError? {
    do {
        try await body()
        return nil
    } catch let error as RPCError {
        return error
    } catch {
        return RPCError.internalError("unexpected \(error)")
    }
}

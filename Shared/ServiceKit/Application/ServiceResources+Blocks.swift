import AviaryAPI
import EventStreams
import Locking
import RPC

extension ServiceResources {
    /// Those of `others` that `user` blocked or that blocked `user`: what the services refuse or
    /// leave out between the two. Read from social-graph (`graph.blockedWith`: everyone blocked
    /// either way with `user`), and kept by a process that keeps them (``keepBlocksInMemory()``)
    /// until social-graph announces a block or unblock of `user`'s, which it does before answering.
    public func blocked(among others: some Collection<Int64>, with user: Int64, context: RPCContext?) async throws -> Set<Int64> {
        let others = Set(others).subtracting([user])
        guard !others.isEmpty else { return [] }
        return try await blocked(with: user, context: context).intersection(others)
    }

    /// Everyone `user` blocked or who blocked `user`, as ``blocked(among:with:context:)`` reads it.
    public func blocked(with user: Int64, context: RPCContext?) async throws -> Set<Int64> {
        try await users(of: user, keptIn: blocksSlot) { try await peers.graph.blockedWith($0, context: context) }
    }

    /// Everyone `muter` mutes now (`graph.mutedBy`), kept by a process that keeps them
    /// (``keepMutesInMemory()``) until social-graph announces a change of `muter`'s mutes.
    public func muted(by muter: Int64, context: RPCContext?) async throws -> Set<Int64> {
        try await users(of: muter, keptIn: mutesSlot) { try await peers.graph.mutedBy($0, context: context) }
    }

    /// The set of users `read` gives for `user`, from the copy in `slot` when it holds it.
    private func users(
        of user: Int64, keptIn slot: borrowing Locked<LocalCopy<Set<Int64>>?>, read: (UserParams) async throws -> [String]
    ) async throws -> Set<Int64> {
        let copy = slot.withLock { $0 }
        let (held, epoch) = copy?.values([user]) ?? ([:], nil)
        if let users = held[user] { return users }
        let users = Set(try await read(UserParams(userId: EntityID(user))).compactMap { Int64($0) })
        copy?.keep([(key: user, value: users)], since: epoch)
        return users
    }

    /// Refuses (`forbidden`) what `user` does to `other` when either blocked the other: `action`
    /// completes "you cannot …".
    public func refuseIfBlocked(_ user: Int64, _ other: Int64, _ action: String, context: RPCContext?) async throws {
        guard user != other, try await !blocked(among: [other], with: user, context: context).isEmpty else { return }
        throw Self.blockRefusal(action)
    }

    /// The refusal of what a block forbids: `action` completes "you cannot …".
    public static func blockRefusal(_ action: String) -> RPCError {
        RPCError.forbidden("you cannot \(action): one of you blocked the other")
    }

    /// Keeps who is blocked with the users this process asked about lately (up to 100,000 users,
    /// each for a minute at most), forgetting the two of every block and unblock social-graph
    /// announces. Call it from `register`: the copy's watch runs with the service.
    public func keepBlocksInMemory() {
        keepInMemory(.blocks(keptBy: configuration.service), in: blocksSlot)
    }

    /// Keeps whom the users this process asked about lately mute (up to 100,000 users, each for a
    /// minute at most), forgetting those whose mutes social-graph announces changed.
    public func keepMutesInMemory() {
        keepInMemory(.mutes(keptBy: configuration.service), in: mutesSlot)
    }

    private func keepInMemory(_ kind: LocalCopyKind, in slot: borrowing Locked<LocalCopy<Set<Int64>>?>) {
        let copy = LocalCopy<Set<Int64>>(kind, redis: redis, capacity: 100_000, lifetime: .seconds(60), logger: logger)
        slot.withLock { $0 = copy }
        addBackgroundService(LocalCopyWatch(redis: redis, watches: [copy.watch(on:)], logger: logger))
    }
}

extension LocalCopyKind {
    /// Who is blocked with whom, kept by the services that refuse or hide across blocks;
    /// social-graph announces the two users of each block and unblock.
    public static func blocks(keptBy service: ServiceName) -> LocalCopyKind {
        LocalCopyKind(service: service.rawValue, name: "blocks", channelPrefix: "aviary:graph:forget-blocks")
    }

    /// Whom each user mutes, kept by the services that leave muted users out of what a user reads;
    /// social-graph announces the muter of each mute, unmute and expiry.
    public static func mutes(keptBy service: ServiceName) -> LocalCopyKind {
        LocalCopyKind(service: service.rawValue, name: "mutes", channelPrefix: "aviary:graph:forget-mutes")
    }
}

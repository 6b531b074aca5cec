import AviaryAPI
import EventStreams
import Foundation
import Logging
import RPC
import ServiceKit

extension SocialGraphService {
    @Sendable func mute(_ params: MuteParams, _ context: RPCContext) async throws -> MuteState {
        let caller = try context.requireUser()
        let other = try Self.otherUser(params.userId, caller: caller, verb: "mute")
        let until = try params.durationSeconds.map { seconds throws(RPCError) in
            guard MuteParams.durations.contains(seconds) else {
                throw RPCError.validation(
                    "durationSeconds must be from 1 to \(MuteParams.durations.upperBound) (a year), got \(seconds)",
                    field: "durationSeconds")
            }
            return Date(timeIntervalSinceNow: TimeInterval(seconds))
        }
        guard try await directory.exists(other, context: context) else { throw Self.unknownUser(params.userId) }
        try await mutes.mute(caller, other, notifications: params.notifications ?? true, until: until)
        OutboxRelay.nudge()
        try await mutes.announce([caller])
        return MuteState(muting: true)
    }

    @Sendable func unmute(_ params: UserParams, _ context: RPCContext) async throws -> MuteState {
        let caller = try context.requireUser()
        let other = try Self.otherUser(params.userId, caller: caller, verb: "unmute")
        if try await mutes.unmute(caller, other) {
            OutboxRelay.nudge()
            try await mutes.announce([caller])
        } else if try await !directory.exists(other, context: context) {
            throw Self.unknownUser(params.userId)
        }
        return MuteState(muting: false)
    }

    @Sendable func muteList(_ params: PageParams, _ context: RPCContext) async throws -> Page<User> {
        try await ownList(params, context, read: mutes.page)
    }

    @Sendable func mutedBy(_ params: UserParams, _ context: RPCContext) async throws -> [String] {
        try await mutes.muted(by: params.userId.value).map { String($0) }
    }

    @Sendable func silencedPairs(_ params: UserPairsParams, _ context: RPCContext) async throws -> [Bool] {
        guard params.pairs.count <= Self.batchLimit else {
            throw RPCError.validation("pairs must hold at most \(Self.batchLimit) pairs, got \(params.pairs.count)", field: "pairs")
        }
        return try await mutes.silenced(params.pairs.map { ($0.userId.value, $0.otherId.value) })
    }

    /// Lifts the mutes whose time is up (a background job, every ``sweepInterval``).
    static func expireMutes(_ mutes: MuteStore, logger: Logger) async {
        do {
            let muters = try await mutes.expire()
            if !muters.isEmpty {
                OutboxRelay.nudge()
                try await mutes.announce(muters)
            }
        } catch {
            logger.warning("could not lift the mutes whose time is up; trying again", metadata: ["error": "\(error)"])
        }
    }

    /// How often social-graph's sweeps run: mutes whose time is up, blocks due a second look.
    static let sweepInterval = Duration.seconds(5)
}

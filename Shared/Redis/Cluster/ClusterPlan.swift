/// How a pipeline is sent to a cluster: its commands cut into units, each sent whole to one node,
/// and how each command's reply is put back together from its units' replies.
struct ClusterPlan {
    /// Commands that go to one node together, in order: one command, one slot's part of a command
    /// split across slots, or a `MULTI` … `EXEC` block.
    struct Unit {
        var commands: [[RedisArgument]]
        /// The slot of the unit's keys; nil for a unit without keys, which any master may serve.
        var slot: Int?
        /// Whether every master runs it (`FLUSHALL`, `SCRIPT LOAD`).
        var everyMaster = false
        /// Whether it goes to every node the pipeline's earlier units went to (`WAIT`: each node
        /// waits for its replicas to have what this pipeline wrote there).
        var followsEarlier = false
    }

    /// Where a command's reply comes from.
    enum Assembly {
        /// The reply of command `index` of unit `unit`.
        case reply(unit: Int, index: Int)
        /// `MGET` split by slot: each part's values go to `positions` among `count`.
        case values(parts: [(unit: Int, positions: [Int])], count: Int)
        /// A count split by slot (`DEL`, `EXISTS`): the parts' counts added up.
        case sum(units: [Int])
    }

    private(set) var units: [Unit] = []
    private(set) var assemblies: [Assembly] = []

    init(_ commands: [[RedisArgument]]) {
        var index = 0
        while index < commands.count {
            let command = commands[index]
            let name = command.first?.upperCasedName ?? ""
            if name == "MULTI" {
                let end = commands[index...].firstIndex {
                    let name = $0.first?.upperCasedName
                    return name == "EXEC" || name == "DISCARD"
                }
                let block = Array(commands[index...(end ?? commands.count - 1)])
                let slot = block.lazy.compactMap { Self.slot(of: $0) }.first
                for offset in block.indices { assemblies.append(.reply(unit: units.count, index: offset)) }
                units.append(Unit(commands: block, slot: slot))
                index += block.count
                continue
            }
            index += 1
            if RedisCommandKeys.everyMaster.contains(name) || name == "WAIT" {
                assemblies.append(.reply(unit: units.count, index: 0))
                units.append(Unit(commands: [command], slot: nil, everyMaster: name != "WAIT", followsEarlier: name == "WAIT"))
                continue
            }
            let positions = RedisCommandKeys.positions(in: command)
            let slots = positions.map { RedisSlot.of(command[$0].bytes) }
            guard let first = slots.first else {
                assemblies.append(.reply(unit: units.count, index: 0))
                units.append(Unit(commands: [command], slot: nil))
                continue
            }
            guard RedisCommandKeys.splitsAcrossSlots(name), slots.contains(where: { $0 != first }) else {
                // One slot, or keys in several that Redis will refuse with CROSSSLOT, as it should.
                assemblies.append(.reply(unit: units.count, index: 0))
                units.append(Unit(commands: [command], slot: first))
                continue
            }
            var order: [Int] = []
            var keysBySlot: [Int: [Int]] = [:]
            for (offset, slot) in slots.enumerated() {
                if keysBySlot[slot] == nil { order.append(slot) }
                keysBySlot[slot, default: []].append(offset)
            }
            var parts: [(unit: Int, positions: [Int])] = []
            for slot in order {
                let offsets = keysBySlot[slot, default: []]
                parts.append((units.count, offsets))
                units.append(Unit(commands: [[command[0]] + offsets.map { command[positions[$0]] }], slot: slot))
            }
            assemblies.append(
                name == "MGET" ? .values(parts: parts, count: positions.count) : .sum(units: parts.map(\.unit)))
        }
    }

    /// The replies to the commands, in order, from each unit's replies.
    func replies(from unitReplies: [[RESPValue]]) -> [RESPValue] {
        assemblies.map { assembly in
            switch assembly {
            case .reply(let unit, let index):
                return unitReplies[unit][index]
            case .values(let parts, let count):
                var values = [RESPValue](repeating: .null, count: count)
                for part in parts {
                    let reply = unitReplies[part.unit][0]
                    guard let got = reply.array, got.count == part.positions.count else { return reply }
                    for (position, value) in zip(part.positions, got) { values[position] = value }
                }
                return .array(values)
            case .sum(let parts):
                var total: Int64 = 0
                for unit in parts {
                    let reply = unitReplies[unit][0]
                    guard case .integer(let count) = reply else { return reply }
                    total += count
                }
                return .integer(total)
            }
        }
    }

    private static func slot(of command: [RedisArgument]) -> Int? {
        RedisCommandKeys.positions(in: command).first.map { RedisSlot.of(command[$0].bytes) }
    }
}

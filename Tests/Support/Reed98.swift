import Foundation

/// The socfb-Reed98 friendship graph (962 people, 18,812 friendships) in `Tests/Fixtures` (its
/// source and licence in the README there), which the graph and timeline suites load.
public struct Reed98: Sendable {
    /// Undirected edges as node pairs.
    public let edges: [(Int, Int)]
    public let nodeCount: Int

    public static func load() throws -> Reed98 {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let file = repository.appendingPathComponent("Tests/Fixtures/socfb-Reed98/socfb-Reed98.edges")
        let text = try String(contentsOf: file, encoding: .utf8)
        var edges: [(Int, Int)] = []
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("%") && !line.hasPrefix("#") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            guard fields.count >= 2, let a = Int(fields[0]), let b = Int(fields[1]) else { continue }
            edges.append((a, b))
        }
        let nodeCount = (edges.map { max($0.0, $0.1) }.max() ?? -1) + 1
        return Reed98(edges: edges, nodeCount: nodeCount)
    }

    /// Each node's friends.
    public var neighbours: [Set<Int>] {
        var sets = Array(repeating: Set<Int>(), count: nodeCount)
        for (a, b) in edges {
            sets[a].insert(b)
            sets[b].insert(a)
        }
        return sets
    }

    /// Each node's number of friends (followers and followees alike, once followed both ways).
    public var degrees: [Int] {
        var degrees = Array(repeating: 0, count: nodeCount)
        for (a, b) in edges {
            degrees[a] += 1
            degrees[b] += 1
        }
        return degrees
    }
}

import Foundation

/// The socfb-Reed98 friendship graph (962 people, 18,812 friendships) from the shared data sets,
/// followed both ways as DeathStarBench loads it.
struct Reed98Graph {
    /// Undirected edges as node pairs.
    let edges: [(Int, Int)]
    let nodeCount: Int

    static func load() throws -> Reed98Graph {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let file = repository.appendingPathComponent("../shared/datasets/socfb-Reed98/socfb-Reed98.edges").standardized
        let text = try String(contentsOf: file, encoding: .utf8)
        var edges: [(Int, Int)] = []
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("%") && !line.hasPrefix("#") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            guard fields.count >= 2, let a = Int(fields[0]), let b = Int(fields[1]) else { continue }
            edges.append((a, b))
        }
        let nodeCount = (edges.map { max($0.0, $0.1) }.max() ?? -1) + 1
        return Reed98Graph(edges: edges, nodeCount: nodeCount)
    }

    /// Each node's friends (followers and followees alike).
    var degrees: [Int] {
        var degrees = Array(repeating: 0, count: nodeCount)
        for (a, b) in edges {
            degrees[a] += 1
            degrees[b] += 1
        }
        return degrees
    }
}

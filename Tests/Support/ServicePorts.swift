import Foundation

/// The JSON-RPC and admin ports of a starting service: from its environment when given there (and not
/// 0), otherwise from the line it logs once it listens, `… rpc=HOST:PORT admin=HOST:PORT …`.
struct ServicePorts: Sendable {
    let rpc: Int
    let admin: Int

    /// Nil until both ports are known.
    init?(environment: [String: String], log: String) {
        let configuredRPC = environment["AVIARY_RPC_PORT"].flatMap(Int.init).flatMap {
            $0 == 0 ? nil : $0
        }
        let configuredAdmin = environment["AVIARY_ADMIN_PORT"].flatMap(Int.init).flatMap {
            $0 == 0 ? nil : $0
        }
        if let configuredRPC, let configuredAdmin {
            (rpc, admin) = (configuredRPC, configuredAdmin)
            return
        }
        guard let text = try? String(contentsOfFile: log, encoding: .utf8),
            let line = text.split(separator: "\n").last(where: {
                $0.contains("rpc=") && $0.contains("admin=")
            }),
            let loggedRPC = Self.port(named: "rpc", in: line),
            let loggedAdmin = Self.port(named: "admin", in: line)
        else { return nil }
        (rpc, admin) = (configuredRPC ?? loggedRPC, configuredAdmin ?? loggedAdmin)
    }

    /// The port of the `key=HOST:PORT` word in `line` (words end at spaces, quotes and commas, so a
    /// JSON log line works as well as a text one).
    static func port(named key: String, in line: Substring) -> Int? {
        let words = line.split { " \t\"',{}".contains($0) }
        guard let word = words.first(where: { $0.hasPrefix(key + "=") }),
            let colon = word.lastIndex(of: ":")
        else { return nil }
        return Int(word[word.index(after: colon)...])
    }
}

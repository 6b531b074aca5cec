import ArgumentParser
import ServiceKit

/// The `aviary` command-line tool.
@main
struct Aviary: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aviary",
        abstract: "Talk to Aviary services and measure them.",
        version: AviaryVersion.description,
        subcommands: [Call.self, Admin.self, Bench.self, Soak.self, Docs.self])
}

import ArgumentParser
import NIOCore
import NIOPosix
import ServiceKit

/// The `aviary` command-line tool.
@main
struct Aviary: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aviary",
        abstract: "Talk to Aviary services and measure them.",
        version: AviaryVersion.version,
        subcommands: [Call.self, Bench.self])

    static func main() async {
        // Tasks then run on NIO's event-loop threads, without a hop between two thread pools per call.
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }
}

import ArgumentParser
import AuthService
import Foundation
import Logging
import Postgres

/// `aviary admin grant|revoke <username>`: gives an account the admin role, which may read reports
/// and suspend accounts (`moderation.*`), or takes it back. Writes auth's table directly: the role
/// is the operator's to give, and no method of the services hands it out.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give an account the admin role (reports, suspensions), or take it back.",
        discussion: """
            Reads AVIARY_POSTGRES_URL (the database auth uses) unless --url is given.
            Examples: aviary admin grant alice
                      aviary admin revoke alice
            """)

    enum Change: String, ExpressibleByArgument, CaseIterable {
        case grant, revoke
    }

    @Argument(help: "grant or revoke.")
    var change: Change

    @Argument(help: "The account's username.")
    var username: String

    @Option(help: "A libpq URL of auth's database (default: AVIARY_POSTGRES_URL, else postgres://aviary@127.0.0.1:5432/aviary).")
    var url = ProcessInfo.processInfo.environment["AVIARY_POSTGRES_URL"] ?? "postgres://aviary@127.0.0.1:5432/aviary"

    func run() async throws {
        var options = PostgresConfiguration.Options()
        options.poolSize = 1
        // Behind a pooler in transaction mode, as the services are told (deploy/README.md).
        options.transactionPooling = ProcessInfo.processInfo.environment["AVIARY_POSTGRES_PREPARED"] == "off"
        let postgres = try PostgresClient(configuration: .init(url: url, options: options), logger: Logger(label: "aviary-admin"))
        let name = username.hasPrefix("@") ? String(username.dropFirst()) : username
        let changed: Bool
        do {
            changed = try await AuthService.setAdmin(change == .grant, username: name, postgres: postgres)
        } catch {
            await postgres.shutdown()
            throw error
        }
        await postgres.shutdown()
        guard changed else {
            // Not a usage mistake: the error alone, without the usage text ValidationError adds.
            FileHandle.standardError.write(Data("Error: no account is named @\(name)\n".utf8))
            throw ExitCode.failure
        }
        print(change == .grant ? "@\(name) is now an admin" : "@\(name) is no longer an admin")
    }
}

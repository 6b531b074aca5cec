import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The OS account that runs the Postgres programs when the tests run as root (initdb and postgres
/// refuse root): `AVIARY_TEST_PG_OSUSER`, or `nobody`.
///
/// Programs switch to it through `setpriv`, which changes the ids and then execs the program, so the
/// server stays our child's own process and gets our signals unchanged. (`runuser` would stay in
/// between as a parent that answers any signal with SIGTERM and, 2 s later, SIGKILL.)
struct ServerAccount: Sendable {
    let name: String
    let uid: uid_t
    let gid: gid_t

    /// The account to switch to, or nil when the tests do not run as root (programs then run as us).
    static let current: Result<ServerAccount?, TestSupportError> = {
        guard geteuid() == 0 else { return .success(nil) }
        let name = ProcessInfo.processInfo.environment["AVIARY_TEST_PG_OSUSER"] ?? "nobody"
        guard let entry = getpwnam(name) else {
            return .failure(
                TestSupportError(
                    "the tests run as root but there is no OS user \(name) to run Postgres as "
                        + "(create it, or name another in AVIARY_TEST_PG_OSUSER)"))
        }
        return .success(
            ServerAccount(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid))
    }()

    /// `command`, run as this account.
    func command(_ command: [String]) -> [String] {
        let setpriv = findExecutable("setpriv") ?? "/usr/bin/setpriv"
        return [setpriv, "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"] + command
    }

    /// Hands `path` over to this account.
    func own(_ path: String) throws {
        guard chown(path, uid, gid) == 0 else {
            throw TestSupportError("chown \(name) \(path): \(String(cString: strerror(errno)))")
        }
    }
}

extension ServerAccount? {
    /// `command` as the account, or unchanged when there is none.
    func command(_ command: [String]) -> [String] {
        self?.command(command) ?? command
    }
}

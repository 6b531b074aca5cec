#if canImport(Glibc)
import Glibc
#endif

/// The process's file descriptor limit (`RLIMIT_NOFILE`).
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one, as a server that holds a connection per client
    /// should (Go's runtime does the same): a shell's soft limit is often 1,024 under a hard limit
    /// of a million, and the default of `AVIARY_MAX_CONNECTIONS` follows the soft limit. Changes
    /// nothing when they are equal (systemd's `LimitNOFILE=` sets both) or when the call fails.
    static func raiseSoftLimit() {
        var limits = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limits) == 0, limits.rlim_cur < limits.rlim_max else { return }
        limits.rlim_cur = limits.rlim_max
        _ = setrlimit(resource, &limits)
    }
}

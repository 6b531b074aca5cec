import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Sets the file descriptor limit (soft and hard `RLIMIT_NOFILE`) of the running process `pid`,
/// with glibc's `prlimit` (which Swift's Glibc module does not declare, so it is looked up).
public func limitFileDescriptors(of pid: Int32, to limit: Int) throws {
    typealias Prlimit = @convention(c) (pid_t, Int32, UnsafePointer<rlimit>?, UnsafeMutablePointer<rlimit>?) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prlimit") else {
        throw TestSupportError("glibc has no prlimit")
    }
    var limits = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard unsafeBitCast(symbol, to: Prlimit.self)(pid, Int32(RLIMIT_NOFILE.rawValue), &limits, nil) == 0 else {
        throw TestSupportError("prlimit of \(pid) failed: \(String(cString: strerror(errno)))")
    }
}

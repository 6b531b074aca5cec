import Foundation

/// The entry point shared by the fuzz targets. Built by `deploy/local/fuzz.sh` (with
/// `-sanitize=fuzzer` and `-D FUZZING`), it hands the command line to libFuzzer, which calls
/// `test` with input after input. In a plain build it replays the files it is given (or the files
/// in the folders it is given) through `test` once each, so that every build compiles the targets
/// and a crash file can be checked without the fuzzer.
public enum FuzzMain {
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    public static func run(_ test: TestOneInput) -> Never {
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, test))
        #else
        var files: [URL] = []
        for argument in CommandLine.arguments.dropFirst() {
            let url = URL(fileURLWithPath: argument)
            if let listed = try? FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil) {
                files += listed.sorted { $0.path < $1.path }
            } else {
                files.append(url)
            }
        }
        for file in files {
            guard let data = try? Data(contentsOf: file) else {
                FileHandle.standardError.write(Data("cannot read \(file.path)\n".utf8))
                exit(2)
            }
            _ = data.withUnsafeBytes { test($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
        }
        print("replayed \(files.count) inputs without the fuzzer")
        exit(0)
        #endif
    }
}

#if FUZZING
/// libFuzzer's driver, for a program that has a `main` of its own (libFuzzer's `main` is then not linked).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: FuzzMain.TestOneInput
) -> CInt
#endif

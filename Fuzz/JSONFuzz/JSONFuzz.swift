import Foundation
import FuzzSupport
import JSONOracle

/// libFuzzer's entry point: one input, which must pass ``JSONOracle/JSONOracle/check(_:everyTypeAtAnyDepth:)``.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    do {
        try JSONOracle.check(data.map { Data(bytes: $0, count: size) } ?? Data())
    } catch {
        fatalError("\(error)")
    }
    return 0
}

/// Fuzzes the JSON scanner and the wire decoder against Foundation's decoder (``JSONOracle``).
@main
enum JSONFuzz {
    static func main() {
        FuzzMain.run(fuzzTestOneInput)
    }
}

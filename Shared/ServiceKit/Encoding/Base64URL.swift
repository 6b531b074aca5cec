import Foundation

extension Data {
    /// Unpadded base64url (RFC 4648 §5), as JWTs, PKCE, signed URLs and Web Push keys write bytes.
    public var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Bytes written as base64url, padded or not; nil for anything else.
    public init?(base64URLEncoded text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") || base64.count % 4 == 0 else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}

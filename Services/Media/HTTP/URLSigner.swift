import Crypto
import Foundation
import ServiceKit

/// Signs and checks the URLs of private (message) media: `?exp=<unix seconds>&sig=<base64url HMAC>`.
/// The key is derived from the service credential, so every media instance agrees without
/// another secret to configure; while the credential is being rotated, URLs signed with a key of
/// any accepted credential are valid, and new ones are signed with the current credential's.
struct URLSigner: Sendable {
    /// The current credential's key first.
    private let keys: [SymmetricKey]
    /// The least time a fresh URL stays valid.
    let lifetime: Int64

    /// - Parameter serviceCredentials: the current credential, then those still accepted.
    init(serviceCredentials: [String], lifetime: Int64) {
        precondition(!serviceCredentials.isEmpty, "URLSigner needs the service credential")
        keys = serviceCredentials.map { credential in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data(credential.utf8)), info: Data("aviary media URL v1".utf8),
                outputByteCount: 32)
        }
        self.lifetime = lifetime
    }

    /// The query string for `mediaID`. The expiry is rounded up to the next quarter of the
    /// lifetime, so the URL stays the same (and cacheable) for a while.
    func query(for mediaID: Int64, now: Date = Date()) -> String {
        let step = max(1, lifetime / 4)
        let expires = (Int64(now.timeIntervalSince1970) + lifetime + step - 1) / step * step
        return "exp=\(expires)&sig=\(signature(mediaID, expires))"
    }

    /// The expiry of a valid, unexpired signature of `mediaID` in `query`; nil otherwise.
    func validExpiry(of mediaID: Int64, query: String?, now: Date = Date()) -> Int64? {
        var fields: [Substring: Substring] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        guard let expiryText = fields["exp"], let expires = Int64(expiryText), let signatureText = fields["sig"],
            expires > Int64(now.timeIntervalSince1970), let signature = Data(base64URLEncoded: signatureText)
        else { return nil }
        let signed = Data("\(mediaID).\(expires)".utf8)
        let valid = keys.contains { HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: $0) }
        return valid ? expires : nil
    }

    private func signature(_ mediaID: Int64, _ expires: Int64) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("\(mediaID).\(expires)".utf8), using: keys[0])
        return Data(code).base64URLEncoded
    }
}

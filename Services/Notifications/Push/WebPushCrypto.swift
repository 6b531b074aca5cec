import Crypto
import Foundation
import RPC
import ServiceKit

/// Web Push's message encryption, to a subscriber's P-256 key and auth secret: RFC 8291's
/// `aes128gcm` (RFC 8188's header and one record), or the `aesgcm` of its earlier draft that
/// Mastodon's apps still subscribe with (salt and key in the `Encryption` and `Crypto-Key` headers).
/// A fresh key pair and salt per message.
enum WebPushCrypto {
    /// An encrypted message: its body and the headers that name how.
    struct Sealed {
        var body: Data
        var headers: [(String, String)]
    }

    /// A subscriber's keys, checked: `p256dh` an uncompressed P-256 point, `auth` 16 bytes, each in
    /// base64url or base64; a validation error names the one that is not.
    struct Subscriber {
        let publicKey: P256.KeyAgreement.PublicKey
        let auth: Data

        init(p256dh: String, auth: String) throws(RPCError) {
            guard let point = Data(base64URLEncoded: p256dh), point.count == 65,
                let key = try? P256.KeyAgreement.PublicKey(x963Representation: point)
            else {
                throw RPCError.validation("p256dh must be a P-256 public key, uncompressed (65 bytes), in base64url", field: "p256dh")
            }
            guard let secret = Data(base64URLEncoded: auth), secret.count == 16 else {
                throw RPCError.validation("auth must be 16 bytes in base64url", field: "auth")
            }
            publicKey = key
            self.auth = secret
        }
    }

    static func seal(_ plaintext: Data, to subscriber: Subscriber, standard: Bool) throws -> Sealed {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let shared = try ephemeral.sharedSecretFromKeyAgreement(with: subscriber.publicKey)
        let (receiver, sender) = (subscriber.publicKey.x963Representation, ephemeral.publicKey.x963Representation)
        return standard
            ? try aes128gcm(plaintext, shared: shared, auth: subscriber.auth, salt: salt, receiver: receiver, sender: sender)
            : try aesgcm(plaintext, shared: shared, auth: subscriber.auth, salt: salt, receiver: receiver, sender: sender)
    }

    /// RFC 8291 §3.4: the key from the shared secret and auth, then RFC 8188's content key and
    /// nonce from the salt; the body is salt, record size, key id (the sender's key) and one record
    /// ending in the last record's delimiter (2).
    private static func aes128gcm(
        _ plaintext: Data, shared: SharedSecret, auth: Data, salt: Data, receiver: Data, sender: Data
    ) throws -> Sealed {
        let keyInfo = Data("WebPush: info\0".utf8) + receiver + sender
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        let (key, nonce) = contentKey(ikm, salt: salt, keyInfo: Data("Content-Encoding: aes128gcm\0".utf8), nonceInfo: Data("Content-Encoding: nonce\0".utf8))
        let sealed = try AES.GCM.seal(plaintext + Data([2]), using: key, nonce: nonce)
        var recordSize = UInt32(4096).bigEndian
        let header = salt + Data(bytes: &recordSize, count: 4) + Data([UInt8(sender.count)]) + sender
        return Sealed(body: header + sealed.ciphertext + sealed.tag, headers: [("Content-Encoding", "aes128gcm")])
    }

    /// The `aesgcm` draft (draft-ietf-webpush-encryption-04): the key from the shared secret and auth
    /// ("Content-Encoding: auth"), content key and nonce from the salt and a context naming both
    /// keys; the record starts with two bytes of padding length (none).
    private static func aesgcm(
        _ plaintext: Data, shared: SharedSecret, auth: Data, salt: Data, receiver: Data, sender: Data
    ) throws -> Sealed {
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: auth, sharedInfo: Data("Content-Encoding: auth\0".utf8), outputByteCount: 32)
        let context = Data("P-256\0".utf8) + Data([0, 65]) + receiver + Data([0, 65]) + sender
        let (key, nonce) = contentKey(
            ikm, salt: salt, keyInfo: Data("Content-Encoding: aesgcm\0".utf8) + context,
            nonceInfo: Data("Content-Encoding: nonce\0".utf8) + context)
        let sealed = try AES.GCM.seal(Data([0, 0]) + plaintext, using: key, nonce: nonce)
        return Sealed(
            body: sealed.ciphertext + sealed.tag,
            headers: [
                ("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(salt.base64URLEncoded)"),
                ("Crypto-Key", "dh=\(sender.base64URLEncoded)"),
            ])
    }

    private static func contentKey(_ ikm: SymmetricKey, salt: Data, keyInfo: Data, nonceInfo: Data) -> (SymmetricKey, AES.GCM.Nonce) {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: keyInfo, outputByteCount: 16)
        let nonceBytes = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: nonceInfo, outputByteCount: 12)
        // 12 bytes are always a valid nonce.
        let nonce = try! AES.GCM.Nonce(data: nonceBytes.withUnsafeBytes { Data($0) })
        return (key, nonce)
    }
}

/// The server's VAPID key (RFC 8292), which signs a JWT per push naming the push service's origin.
struct VAPIDKey: Sendable {
    let key: P256.Signing.PrivateKey
    /// Who runs this server, for push services to write to (`sub`).
    let contact: String

    /// The public key as subscribers are given it: base64url of the uncompressed point.
    var publicKey: String { key.publicKey.x963Representation.base64URLEncoded }

    /// A JWT for `audience` (the endpoint's scheme, host and port), valid 12 hours.
    func token(for audience: String, now: Date = Date()) throws -> String {
        let header = Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8).base64URLEncoded
        let claims = try JSONSerialization.data(
            withJSONObject: ["aud": audience, "exp": Int(now.timeIntervalSince1970) + 12 * 3600, "sub": contact], options: [.sortedKeys])
        let signed = header + "." + claims.base64URLEncoded
        let signature = try key.signature(for: Data(signed.utf8)).rawRepresentation
        return signed + "." + signature.base64URLEncoded
    }

    /// The headers that sign a push to `audience`: RFC 8292's `vapid` scheme for `aes128gcm`, the
    /// draft's `WebPush` with the key in `Crypto-Key` for `aesgcm`.
    func headers(for audience: String, standard: Bool) throws -> [(String, String)] {
        let jwt = try token(for: audience)
        return standard
            ? [("Authorization", "vapid t=\(jwt), k=\(publicKey)")]
            : [("Authorization", "WebPush \(jwt)"), ("Crypto-Key", "p256ecdsa=\(publicKey)")]
    }
}

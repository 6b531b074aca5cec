import AviaryAPI
import RPC

/// The rules an account's fields follow, each refusal a `validation` error naming the field and the limit.
enum AccountRules {
    static let emailLimit = 254
    static let passwordLength = 8...128

    /// Names nobody may take: they would pass for the service, its staff or a system word.
    static let reservedUsernames: Set<String> = [
        "admin", "administrator", "root", "support", "help", "aviary", "api", "system", "null", "nil", "undefined",
        "staff", "moderator", "mod", "security", "official", "owner", "superuser", "sysadmin", "webmaster",
        "postmaster", "hostmaster", "abuse", "noreply", "no_reply", "info", "contact", "settings", "account",
        "accounts", "login", "logout", "signin", "signout", "signup", "register", "auth", "oauth", "everyone",
        "here", "anonymous", "nobody", "user", "users", "status", "about", "privacy", "terms", "www", "mail",
    ]

    /// A trimmed email address of basic syntax (`local@domain.tld`, ASCII domain), at most 254 characters.
    static func email(_ value: String, field: String = "email") throws(RPCError) -> String {
        let email = value.trimmingWhitespace()
        guard !email.isEmpty else { throw RPCError.validation("\(field) must not be empty", field: field) }
        guard email.unicodeScalars.count <= emailLimit else {
            throw RPCError.validation("\(field) must be at most \(emailLimit) characters", field: field)
        }
        guard isPlausibleEmail(email) else {
            throw RPCError.validation("\(field) must be an email address such as name@example.com", field: field)
        }
        return email
    }

    private static func isPlausibleEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let local = parts[0]
        let domain = parts[1]
        guard (1...64).contains(local.unicodeScalars.count),
            local.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !$0.properties.isWhitespace }),
            !local.unicodeScalars.contains(where: { "\"(),:;<>[\\]".unicodeScalars.contains($0) })
        else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, let top = labels.last, top.count >= 2, top.allSatisfy(\.isLetter) else { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }
        }
    }

    /// A username (TextRules.username: 3–15 of `[a-z0-9_]`, lower-cased) that is not reserved.
    static func username(_ value: String, field: String = "username") throws(RPCError) -> String {
        let username = try TextRules.username(value, field: field)
        guard !isReserved(username) else {
            throw RPCError.validation("\(field) '\(username)' is reserved; choose another", field: field)
        }
        return username
    }

    static func isReserved(_ username: String) -> Bool {
        reservedUsernames.contains(username) || username.hasPrefix("aviary")
    }

    /// A password of 8 to 128 characters, used exactly as given (not trimmed).
    static func password(_ value: String, field: String = "password") throws(RPCError) -> String {
        let count = value.unicodeScalars.count
        guard passwordLength.contains(count) else {
            throw RPCError.validation(
                "\(field) must be \(passwordLength.lowerBound) to \(passwordLength.upperBound) characters, got \(count)",
                field: field)
        }
        return value
    }

    static func fullname(_ value: String, field: String = "fullname") throws(RPCError) -> String {
        try TextRules.text(value, field: field, allowed: 1...TextRules.fullnameLimit)
    }

    static func bio(_ value: String, field: String = "bio") throws(RPCError) -> String {
        try TextRules.text(value, field: field, allowed: 0...TextRules.bioLimit)
    }
}

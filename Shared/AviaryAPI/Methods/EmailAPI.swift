import RPC

/// auth's methods that go through the account's mailbox: proving an email is one's own, and
/// resetting a forgotten password. Each mail holds a single-use token; the server must have an SMTP
/// server to send through (`AVIARY_SMTP_URL`), else the requests answer `unavailable`.
public enum EmailAPI {
    public static let requestEmailVerification = RPCMethod<Empty, MailRequested>(
        "auth.requestEmailVerification", access: .user,
        summary: """
            Mails the caller a token that proves the account's email is theirs (auth.verifyEmail), good for 24 \
            hours; an earlier one stops working. conflict when the email is verified already; at most 5 an hour \
            (rate_limited).
            """)

    public static let verifyEmail = RPCMethod<EmailTokenParams, EmailVerified>(
        "auth.verifyEmail", access: .anonymous,
        summary: """
            Marks the email of the token's account verified (User.emailVerified). The token works once, within 24 \
            hours, while the account still has the email it was sent to; validation error naming token otherwise.
            """)

    public static let requestPasswordReset = RPCMethod<PasswordResetRequest, MailRequested>(
        "auth.requestPasswordReset", access: .anonymous,
        summary: """
            Mails a password reset token (auth.resetPassword, good for an hour) to the account with this email, \
            if there is one: the answer is the same either way, so it tells nobody whether the address has an \
            account. At most 5 an hour per email, and 20 per network address (rate_limited).
            """)

    public static let resetPassword = RPCMethod<PasswordReset, ChangePasswordResult>(
        "auth.resetPassword", access: .anonymous,
        summary: """
            Sets the password of the token's account to newPassword (8-128 characters) and ends all its sessions; \
            the email counts as verified. The token works once, within the hour; validation error naming token \
            otherwise. Returns {endedSessions}.
            """)
}

/// The answer to a request for mail: `true` once it is queued (or, for a password reset, would be
/// had the address an account).
public struct MailRequested: Codable, Sendable {
    public var requested: Bool

    public init(requested: Bool) {
        self.requested = requested
    }
}

/// Params naming a token from a mail.
public struct EmailTokenParams: Codable, Sendable {
    public var token: String

    public init(token: String) {
        self.token = token
    }
}

/// What `auth.verifyEmail` answers.
public struct EmailVerified: Codable, Sendable {
    public var emailVerified: Bool

    public init(emailVerified: Bool) {
        self.emailVerified = emailVerified
    }
}

/// Params of `auth.requestPasswordReset`.
public struct PasswordResetRequest: Codable, Sendable {
    public var email: String

    public init(email: String) {
        self.email = email
    }
}

/// Params of `auth.resetPassword`.
public struct PasswordReset: Codable, Sendable {
    public var token: String
    public var newPassword: String

    public init(token: String, newPassword: String) {
        self.token = token
        self.newPassword = newPassword
    }
}

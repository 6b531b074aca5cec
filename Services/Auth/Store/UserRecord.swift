import Foundation
import Postgres

/// One row of `auth.users` as handlers use it (the password hash stays in the store).
struct UserRecord: Sendable, Hashable {
    var id: Int64
    var email: String
    var username: String
    var fullname: String
    var bio: String
    var profileImageID: Int64?
    var createdAt: Date
    /// When an admin suspended the account and why, while it is suspended.
    var suspension: Suspension?
    /// Whether the account's owner proved the email is theirs (``EmailTokenStore``).
    var emailVerified = false

    struct Suspension: Sendable, Hashable {
        var at: Date
        var reason: String
    }

    /// The columns `init(row:)` reads, in order, for `SELECT \(UserRecord.columns) FROM auth.users`.
    static let columns =
        "id, email, username, fullname, bio, profile_image_id, created_at, suspended_at, suspension_reason, email_verified_at"
    /// How many columns ``columns`` names: what a query selects after them starts there.
    static let columnCount = 10

    init(
        id: Int64, email: String, username: String, fullname: String, bio: String, profileImageID: Int64?, createdAt: Date
    ) {
        self.id = id
        self.email = email
        self.username = username
        self.fullname = fullname
        self.bio = bio
        self.profileImageID = profileImageID
        self.createdAt = createdAt
    }

    init(row: PostgresRow, offset: Int = 0) throws {
        id = try row.decode(at: offset)
        email = try row.decode(at: offset + 1)
        username = try row.decode(at: offset + 2)
        fullname = try row.decode(at: offset + 3)
        bio = try row.decode(at: offset + 4)
        profileImageID = try row.decode(at: offset + 5)
        createdAt = try row.decode(at: offset + 6)
        let suspendedAt: Date? = try row.decode(at: offset + 7)
        suspension = try suspendedAt.map { Suspension(at: $0, reason: try row.decode(String?.self, at: offset + 8) ?? "") }
        emailVerified = try row.decode(Date?.self, at: offset + 9) != nil
    }
}

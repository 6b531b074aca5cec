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

    /// The columns `init(row:)` reads, in order, for `SELECT \(UserRecord.columns) FROM auth.users`.
    static let columns = "id, email, username, fullname, bio, profile_image_id, created_at"

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
    }
}

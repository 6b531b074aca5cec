import AviaryAPI

/// The result of `tweets.delete`.
struct DeleteResult: Codable, Sendable {
    var deleted: Bool
}


/// The isolation level of a `PostgresClient.transaction`.
public enum PostgresIsolation: Sendable, Hashable {
    case readCommitted
    case repeatableRead
    case serializable

    var beginStatement: String {
        switch self {
        case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}

/// A list of column names (`"id, user_id, …"`, as row decoders publish theirs) with each name
/// qualified by `alias` (`"s.id, s.user_id, …"`), for a join that reads one table's columns.
public func qualifiedColumns(_ columns: String, by alias: String) -> String {
    columns.split(separator: ",").map { "\(alias)." + $0.filter { $0 != " " && $0 != "\n" } }.joined(separator: ", ")
}

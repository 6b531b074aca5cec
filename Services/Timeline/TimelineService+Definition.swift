import ServiceKit

extension TimelineService {
    /// What `aviary-timeline` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(name: .timeline, register: register)
}

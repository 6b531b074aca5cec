import ServiceKit
import TimelineService

await ServiceApplication.main(TimelineService.definition)

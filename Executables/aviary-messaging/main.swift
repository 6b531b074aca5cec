import MessagingService
import ServiceKit

await ServiceApplication.main(MessagingService.definition)

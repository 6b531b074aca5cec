import MediaService
import ServiceKit

await ServiceApplication.main(MediaService.definition)

import ServiceKit
import TweetsService

await ServiceApplication.main(TweetsService.definition)

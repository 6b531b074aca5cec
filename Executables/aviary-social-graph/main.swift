import ServiceKit
import SocialGraphService

await ServiceApplication.main(SocialGraphService.definition)

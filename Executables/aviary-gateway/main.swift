import GatewayService
import ServiceKit

await ServiceApplication.main(GatewayService.definition)

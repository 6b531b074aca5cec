import AuthService
import ServiceKit

await ServiceApplication.main(AuthService.definition)

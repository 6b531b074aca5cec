import ServiceKit
import Testing

@Suite struct ServiceAuthenticatorTests {
    @Test func acceptsItsCredentialAndTheOnesAcceptedBesidesIt() {
        let rotating = ServiceAuthenticator(acceptedCredentials: ["new-secret", "old-secret"])
        #expect(rotating.isServiceCredential("new-secret"))
        #expect(rotating.isServiceCredential("old-secret"))
        for wrong in ["", "new-secre", "new-secretx", "NEW-SECRET", "old-secret,new-secret", "new-secretold-secret"] {
            #expect(!rotating.isServiceCredential(wrong), "'\(wrong)'")
        }

        let settled = ServiceAuthenticator(acceptedCredentials: ["new-secret"])
        #expect(settled.isServiceCredential("new-secret"))
        #expect(!settled.isServiceCredential("old-secret"), "once the rotation ends, the old credential is refused")
    }
}

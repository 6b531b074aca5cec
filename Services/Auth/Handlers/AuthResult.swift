import AviaryAPI
import Foundation

extension AuthResult {
    init(user: User, tokens: IssuedTokens, created: Bool? = nil) {
        self.init(
            user: user, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt,
            created: created)
    }
}

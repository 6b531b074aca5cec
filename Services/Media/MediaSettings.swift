import AviaryAPI
import Foundation
import ServiceKit

/// The media service's own configuration, read from `AVIARY_MEDIA_*`.
struct MediaSettings: Sendable {
    /// `AVIARY_MEDIA_ROOT`: the storage folder. Default `.aviary-local/media` when the working
    /// directory holds the local stack's data folder (deploy/local/stack.sh), else `media`.
    var root: String
    /// `AVIARY_MEDIA_PUBLIC_URL`: where clients reach `GET /media/<id>` (this service's admin port);
    /// the same variable auth uses for `profileImageUrl`. Default `http://127.0.0.1:7207`.
    var publicURL: String
    /// `AVIARY_MEDIA_CHUNK_BYTES`: the chunk size `beginUpload` asks for. Default 1 MiB; must fit
    /// in a frame as base64.
    var chunkBytes: Int
    /// `AVIARY_MEDIA_MAX_IMAGE_BYTES`: default 16 MiB.
    var maxImageBytes: Int64
    /// `AVIARY_MEDIA_MAX_VIDEO_BYTES`: default 100 MiB.
    var maxVideoBytes: Int64
    /// `AVIARY_MEDIA_UPLOAD_EXPIRY_SECONDS`: how long an unfinished upload lives. Default 24 h.
    var uploadLifetime: Duration
    /// `AVIARY_MEDIA_SWEEP_INTERVAL_SECONDS`: how often expired uploads are removed. Default 60 s.
    var sweepInterval: Duration
    /// `AVIARY_MEDIA_ORPHAN_SWEEP_SECONDS`: how often the stored content is looked through for files
    /// no medium holds (left by a crash between a deletion's commit and its unlink, or by an upload
    /// that expired while being finished); a file must be that old to go. Default 1 h.
    var orphanSweepInterval: Duration
    /// `AVIARY_MEDIA_URL_LIFETIME_SECONDS`: how long a signed (message media) URL is valid at least. Default 1 h.
    var signedURLLifetime: Int64
    /// `AVIARY_MEDIA_OPEN_UPLOADS_PER_USER`: how many unfinished uploads one user may have at once
    /// (each holds up to its declared size on disk until it is finished or expires). Default 20.
    var openUploadsPerUser: Int

    /// The longest `length` of `media.read`, so its base64 answer fits a default client frame.
    static let maxReadBytes = 512 * 1024

    init(configuration: ServiceConfiguration) throws {
        root = configuration.value("AVIARY_MEDIA_ROOT") ?? Self.defaultRoot()
        var publicURL = configuration.value("AVIARY_MEDIA_PUBLIC_URL") ?? "http://127.0.0.1:7207"
        while publicURL.hasSuffix("/") { publicURL.removeLast() }
        self.publicURL = publicURL
        // base64 grows a chunk by 4/3; the rest of the request needs far less than 16 KiB.
        let largestChunk = (configuration.maxFrameBytes - 16 * 1024) / 4 * 3
        guard largestChunk >= 4096 else {
            throw ConfigurationError(
                variable: "AVIARY_MAX_FRAME_BYTES", message: "AVIARY_MAX_FRAME_BYTES must be at least 24 KiB for media uploads")
        }
        chunkBytes = try configuration.integer(
            "AVIARY_MEDIA_CHUNK_BYTES", default: min(1 << 20, largestChunk), in: 4096...largestChunk)
        maxImageBytes = Int64(try configuration.integer("AVIARY_MEDIA_MAX_IMAGE_BYTES", default: 16 << 20, in: 1...(1 << 40)))
        maxVideoBytes = Int64(try configuration.integer("AVIARY_MEDIA_MAX_VIDEO_BYTES", default: 100 << 20, in: 1...(1 << 40)))
        uploadLifetime = .seconds(
            try configuration.integer("AVIARY_MEDIA_UPLOAD_EXPIRY_SECONDS", default: 86_400, in: 1...(365 * 86_400)))
        sweepInterval = .seconds(try configuration.integer("AVIARY_MEDIA_SWEEP_INTERVAL_SECONDS", default: 60, in: 1...86_400))
        orphanSweepInterval = .seconds(
            try configuration.integer("AVIARY_MEDIA_ORPHAN_SWEEP_SECONDS", default: 3600, in: 1...(7 * 86_400)))
        openUploadsPerUser = try configuration.integer("AVIARY_MEDIA_OPEN_UPLOADS_PER_USER", default: 20, in: 1...100_000)
        signedURLLifetime = Int64(
            try configuration.integer("AVIARY_MEDIA_URL_LIFETIME_SECONDS", default: 3600, in: 60...(30 * 86_400)))
    }

    /// The largest upload of `type`; a data export may be as large as 1 GiB.
    func maxBytes(of type: MediaType) -> Int64 {
        type == .zip ? 1 << 30 : type.isVideo ? maxVideoBytes : maxImageBytes
    }

    private static func defaultRoot() -> String {
        var isFolder: ObjCBool = false
        let stack = ".aviary-local"
        if FileManager.default.fileExists(atPath: stack, isDirectory: &isFolder), isFolder.boolValue {
            return stack + "/media"
        }
        return "media"
    }
}

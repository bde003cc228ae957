import Foundation
import MLToolHTTP

/// The studio's page: HTML, CSS and JavaScript in Studio/Assets/, embedded in the binary by SwiftPM
/// (`.embedInCode` in Package.swift: `PackageResources`), so nothing is read from beside the binary and nothing can
/// drift from the files in the tree. The page is served with the launch token written into it.
enum StudioAssets {
    static let files: [String: (type: String, bytes: [UInt8])] = [
        "studio.js": ("text/javascript; charset=utf-8", PackageResources.studio_js),
        "studio.css": ("text/css; charset=utf-8", PackageResources.studio_css),
    ]

    /// Scripts only from the studio itself; no framing by other pages.
    static let policy = "default-src 'self'; img-src 'self' blob: data:; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

    static func page(token: String) -> HTTPResponse {
        let html = String(decoding: PackageResources.index_html, as: UTF8.self).replacingOccurrences(of: "{{TOKEN}}", with: token)
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": policy,
                                                   "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"],
                            body: Array(html.utf8))
    }

    static func file(_ name: String) -> HTTPResponse? {
        files[name].map { HTTPResponse(status: 200, headers: ["Content-Type": $0.type, "Cache-Control": "no-store"], body: $0.bytes) }
    }
}

/// The browser host's own web code, kept in `Resources/` as the files it is (linted by the browser
/// tests) and built into the binary (SwiftPM's `embedInCode`), so that `miniapp` stays one file.
enum PageResources {
    /// One of the files.
    enum File: CaseIterable {
        case bridgeCore, bridgeRakuten, bridgeRakutenGlobal, bridgeWebKit, bridgeURLScheme
        case hostPage, hostStyle, hostScript, hostChrome, panelScript, panelStyle

        /// Its name in `Resources/`.
        var name: String {
            switch self {
            case .bridgeCore: "bridge-core.js"
            case .bridgeRakuten: "bridge-rakuten.js"
            case .bridgeRakutenGlobal: "bridge-rakuten-global.js"
            case .bridgeWebKit: "bridge-webkit.js"
            case .bridgeURLScheme: "bridge-url-scheme.js"
            case .hostPage: "host-page.html"
            case .hostStyle: "host.css"
            case .hostScript: "host.js"
            case .hostChrome: "host-chrome.js"
            case .panelScript: "panel.js"
            case .panelStyle: "panel.css"
            }
        }

        fileprivate var bytes: [UInt8] {
            switch self {
            case .bridgeCore: PackageResources.bridge_core_js
            case .bridgeRakuten: PackageResources.bridge_rakuten_js
            case .bridgeRakutenGlobal: PackageResources.bridge_rakuten_global_js
            case .bridgeWebKit: PackageResources.bridge_webkit_js
            case .bridgeURLScheme: PackageResources.bridge_url_scheme_js
            case .hostPage: PackageResources.host_page_html
            case .hostStyle: PackageResources.host_css
            case .hostScript: PackageResources.host_js
            case .hostChrome: PackageResources.host_chrome_js
            case .panelScript: PackageResources.panel_js
            case .panelStyle: PackageResources.panel_css
            }
        }
    }

    private static let texts: [File: String] = Dictionary(uniqueKeysWithValues: File.allCases.map { ($0, String(decoding: $0.bytes, as: UTF8.self)) })

    /// The file's text.
    static func text(_ file: File) -> String { texts[file]! }
}

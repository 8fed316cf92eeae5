import Foundation
package import MiniAppCore
import MiniAppPermissions

/// The actions a host answers with its own user interface or its own records: sharing, ads, purchases,
/// preferences, cookies, login, browsers and the gallery. The host's services show what the user sees;
/// the bridge checks the parameters first and keeps what must last (preferences, receipts) in the store.
extension BridgeDispatcher {
    /// The answer to one of these actions; `nil` when `action` is none of them.
    func answerHostUI(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String?? {
        switch action {
        case "shareInfo": return .some(try await share(param))
        case "loadAd":
            try await services.loadAd(appId: appId, try Self.ad(action, param))
            return "SUCCESS"
        case "showAd":
            let ad = try Self.ad(action, param)
            let reward = try await services.showAd(appId: appId, ad)
            guard ad.kind == .rewarded else { return "CLOSED" }
            return .some(reward.map { JSONWriter.text(Self.rewardJSON($0)) } ?? "null")
        case "setMiniAppPreference", "getMiniAppPreference", "removeMiniAppPreference", "clearMiniAppPreferences":
            return .some(try await preference(action, param))
        case "getAllProducts":
            return .some(JSONWriter.text(.array(try await services.products(appId: appId).map(Self.productJSON))))
        case "purchaseProductWith": return .some(try await purchase(param))
        case "consumeProductWith": return .some(try await consume(param))
        case "getAllCookies", "getCookies": return .some(try await cookies(action, param))
        case "triggerLoginUI": return try await services.logIn(appId: appId) ? "true" : "false"
        case "forceLogout": return try await services.logOut(appId: appId) ? "true" : "false"
        case "launchExternalBrowser", "launchInternalBrowser", "launchInteractiveBrowser":
            let kind: BridgeBrowser = action == "launchExternalBrowser" ? .external : action == "launchInternalBrowser" ? .internal : .interactive
            guard case .string(let url)? = param["url"], Self.isWebURL(url) else {
                throw BridgeFailure(type: "InvalidUrlError", message: "\(action) opens an http or https URL given as {\"url\": string}")
            }
            return try await services.openBrowser(appId: appId, kind, url: url) ? "true" : "false"
        case "loadUsingHTMLString":
            guard case .string(let html)? = param["htmlString"], !html.isEmpty, case .string(let callback)? = param["callbackUrl"], Self.isWebURL(callback) else {
                throw BridgeFailure(type: "InternalBrowserError", message: "loadUsingHTMLString takes {\"htmlString\": string, \"callbackUrl\": an http or https URL}")
            }
            return .some(try await services.loadHTML(appId: appId, html: html, callbackURL: callback) ?? "CANCELLED")
        case "getImageFromGallery":
            let image = try await services.imageFromGallery(appId: appId)
            var fields: [String: JSONValue] = ["data": .array(image.data.map { .number(Double($0)) })]
            if let mimeType = image.mimeType { fields["mimeType"] = .string(mimeType) }
            if let filename = image.filename { fields["filename"] = .string(filename) }
            return .some(JSONWriter.text(.object(fields)))
        case "getCurrentPosition":
            let position = try await services.currentPosition(appId: appId)
            guard (-90...90).contains(position.latitude), (-180...180).contains(position.longitude) else {
                throw BridgeFailure(type: "POSITION_UNAVAILABLE", message: "the host's position is not on Earth")
            }
            return .some(JSONWriter.text(position.json()))
        // A browser has back and forward already, and its frames are the host's own web view.
        case "allowBackForwardNavigationGestures", "forceInternalWebView": return "true"
        // A browser has no other app installed that it could find.
        case "isAppInstalledInDevice": return "false"
        case "shouldClearNotifications", "shouldUpdateBadgeNumber", "shouldUpdateNotificationInfo":
            return .some(try await services.receive(appId: appId, action: action, info: param))
        default: return nil
        }
    }

    package static func isWebURL(_ text: String) -> Bool {
        guard text.utf8.count <= 8192, let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false else { return false }
        return scheme == "http" || scheme == "https"
    }

    // MARK: Sharing and ads

    private func share(_ param: JSONValue) async throws(BridgeFailure) -> String {
        let expected = "{\"shareInfo\": {\"content\": string, \"url\": string, \"imageData\": [byte]}}"
        guard let info = param["shareInfo"], case .string(let content)? = info["content"] else { throw .invalidParameters("shareInfo", expected) }
        var url: String?
        if case .string(let text)? = info["url"], !text.isEmpty { url = text }
        var image: [UInt8]?
        if case .array(let numbers)? = info["imageData"] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(numbers.count)
            for number in numbers {
                guard case .number(let value) = number, value >= 0, value <= 255, value.rounded() == value else { throw .invalidParameters("shareInfo", expected) }
                bytes.append(UInt8(value))
            }
            if !bytes.isEmpty { image = bytes }
        }
        // An image alone is something to share (the sample shares its picture with the text field empty).
        guard !content.isEmpty || image != nil else { throw BridgeFailure(type: "MiniAppError", message: "there is nothing to share: no text and no image") }
        try await services.share(appId: appId, BridgeShare(content: content, url: url, image: image))
        return "SUCCESS"
    }

    private static func ad(_ action: String, _ param: JSONValue) throws(BridgeFailure) -> BridgeAd {
        guard case .number(let type)? = param["adType"], let kind = BridgeAd.Kind(rawValue: Int(type)), Double(kind.rawValue) == type,
              case .string(let unit)? = param["adUnitId"], !unit.isEmpty, unit.utf8.count <= 256 else {
            throw .invalidParameters(action, "{\"adType\": 0 or 1, \"adUnitId\": string}")
        }
        return BridgeAd(kind: kind, unitId: unit)
    }

    package static func rewardJSON(_ reward: BridgeReward) -> JSONValue {
        var fields: [String: JSONValue] = [:]
        if let type = reward.type { fields["type"] = .string(type) }
        if let amount = reward.amount { fields["amount"] = .number(Double(amount)) }
        return .object(fields)
    }

    // MARK: Preferences

    private func preference(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String {
        do {
            switch action {
            case "setMiniAppPreference":
                guard case .string(let key)? = param["preferenceKey"], case .string(let value)? = param["preferenceValue"] else {
                    throw BridgeFailure.invalidParameters(action, "{\"preferenceKey\": string, \"preferenceValue\": string}")
                }
                try await store.setHostRecord(appId: appId, .preference, key: key, value: value)
                return "SUCCESS"
            case "getMiniAppPreference", "removeMiniAppPreference":
                guard case .string(let key)? = param["preferenceKey"] else { throw BridgeFailure.invalidParameters(action, "{\"preferenceKey\": string}") }
                if action == "removeMiniAppPreference" {
                    try await store.setHostRecord(appId: appId, .preference, key: key, value: nil)
                    return "SUCCESS"
                }
                guard let value = try await store.hostRecord(appId: appId, .preference, key: key) else {
                    throw BridgeFailure(type: "MiniAppError", message: "no preference is kept under the key '\(Sanitizer.printable(key, limit: 80))'")
                }
                return value
            default:
                try await store.clearHostRecords(appId: appId, .preference)
                return "SUCCESS"
            }
        } catch let failure as BridgeFailure {
            throw failure
        } catch {
            throw Self.recordFailure(error)
        }
    }

    private static func recordFailure(_ error: any Error) -> BridgeFailure {
        if let error = error as? HostRecordError { return BridgeFailure(type: "MiniAppError", message: error.description) }
        return BridgeFailure(type: "MiniAppError", message: "the host's store failed: \(error)")
    }

    // MARK: Purchases

    package static func productJSON(_ product: BridgeProduct) -> JSONValue {
        .object([
            "id": .string(product.id), "title": .string(product.title), "description": .string(product.description),
            "productPrice": .object(["currencyCode": .string(product.productPrice.currencyCode), "price": .string(product.productPrice.price)]),
        ])
    }

    /// The receipts the app keeps, by transaction id.
    private func receipts() async throws(BridgeFailure) -> [String: JSONValue] {
        do {
            return try await store.hostRecords(appId: appId, .purchase).compactMapValues { JSONReader.value(Array($0.utf8), maxDepth: 8) }
        } catch {
            throw Self.recordFailure(error)
        }
    }

    private func purchase(_ param: JSONValue) async throws(BridgeFailure) -> String {
        guard case .string(let id)? = param["productId"], !id.isEmpty else { throw .invalidParameters("purchaseProductWith", "{\"productId\": string}") }
        guard let product = try await services.products(appId: appId).first(where: { $0.id == id }) else {
            throw BridgeFailure(type: "ProductNotFoundError", message: "the host sells no product '\(Sanitizer.printable(id, limit: 80))'")
        }
        // A purchase not consumed yet is owned: buying it again waits until the app consumed it.
        if try await receipts().values.contains(where: { $0["productInfo"]?["id"] == .string(id) && $0["consumed"] != .bool(true) }) {
            throw BridgeFailure(type: "ProductPurchasedAlreadyError", message: "'\(Sanitizer.printable(id, limit: 80))' is purchased already and not consumed")
        }
        try await services.confirmPurchase(appId: appId, product)
        guard !Task.isCancelled else { throw .noCapability }
        let transaction = UUID().uuidString.lowercased()
        let answer: JSONValue = .object([
            "productInfo": Self.productJSON(product), "transactionId": .string(transaction),
            "transactionDate": .number((Date().timeIntervalSince1970 * 1000).rounded()),
        ])
        var receipt = answer
        if case .object(var fields) = receipt { fields["consumed"] = .bool(false); receipt = .object(fields) }
        do {
            try await store.setHostRecord(appId: appId, .purchase, key: transaction, value: JSONWriter.text(receipt))
        } catch {
            throw BridgeFailure(type: "PurchaseFailedError", message: "the host could not keep the receipt: \(error)")
        }
        return JSONWriter.text(answer)
    }

    private func consume(_ param: JSONValue) async throws(BridgeFailure) -> String {
        guard case .string(let id)? = param["productId"], case .string(let transaction)? = param["productTransactionId"], !transaction.isEmpty,
              transaction.utf8.count <= PermissionStore.maxHostRecordKeyBytes else {
            throw .invalidParameters("consumeProductWith", "{\"productId\": string, \"productTransactionId\": string}")
        }
        guard let receipt = try await receipts()[transaction], receipt["productInfo"]?["id"] == .string(id) else {
            throw BridgeFailure(type: "ConsumeFailedError", message: "no purchase of '\(Sanitizer.printable(id, limit: 80))' has the transaction '\(Sanitizer.printable(transaction, limit: 80))'")
        }
        guard receipt["consumed"] != .bool(true), case .object(var fields) = receipt else {
            throw BridgeFailure(type: "ConsumeFailedError", message: "the purchase '\(Sanitizer.printable(transaction, limit: 80))' is consumed already")
        }
        fields["consumed"] = .bool(true)
        do {
            try await store.setHostRecord(appId: appId, .purchase, key: transaction, value: JSONWriter.text(.object(fields)))
        } catch {
            throw BridgeFailure(type: "ConsumeFailedError", message: "the host could not update the receipt: \(error)")
        }
        return JSONWriter.text(.object(["title": receipt["productInfo"]?["title"] ?? .null, "description": receipt["productInfo"]?["description"] ?? .null]))
    }

    // MARK: Cookies

    private func cookies(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String {
        var cookies = try await services.cookies(appId: appId)
        if action == "getCookies" {
            guard case .array(let list)? = param["cookieList"] else { throw .invalidParameters(action, "{\"cookieList\": [string]}") }
            let names = Set(list.compactMap { value -> String? in if case .string(let name) = value { return name } else { return nil } })
            cookies = cookies.filter { names.contains($0.name) }
        }
        return JSONWriter.text(.array(cookies.map { .object(["name": .string($0.name), "value": .string($0.value)]) }))
    }
}

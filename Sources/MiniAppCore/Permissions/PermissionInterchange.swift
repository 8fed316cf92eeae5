public import Foundation

/// The two interchange shapes of a stored grant list that the SDKs use.
public enum PermissionInterchange: String, Sendable, CaseIterable {
    /// `[{"permissionName": "<full name>", "isPermissionGranted": "ALLOWED", "permissionDescription": "..."}]`
    case full
    /// `{"miniAppId": "<id>", "pairValues": [{"first": "USER_NAME", "second": "ALLOWED"}]}`
    case pairs

    /// The app's permissions in this shape (undecided declared ones as `DENIED`).
    public func export(appId: String, _ states: [PermissionState]) throws -> Data {
        let encoder = RecordCoding.encoder(pretty: true)
        switch self {
        case .full:
            return try encoder.encode(states.map { FullEntry(permissionName: $0.name, isPermissionGranted: $0.status.rawValue, permissionDescription: $0.reason ?? "") })
        case .pairs:
            let pairs = states.map { Pair(first: KnownPermission(rawValue: $0.name)?.shortName ?? $0.name, second: $0.status.rawValue) }
            return try encoder.encode(PairsDocument(miniAppId: appId, pairValues: pairs))
        }
    }

    /// The statuses (by full name) in a document of either shape, and the app id it names, if any.
    public static func parse(_ data: Data) throws -> (appId: String?, statuses: [String: PermissionStatus]) {
        guard let document = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw PermissionStoreError.invalidImport(reason: "it is not JSON")
        }
        var statuses: [String: PermissionStatus] = [:]
        switch document {
        case .array(let entries):
            for entry in entries {
                guard case .object(let fields) = entry, case .string(let name)? = fields["permissionName"] else {
                    throw PermissionStoreError.invalidImport(reason: "an entry lacks permissionName")
                }
                statuses[try checkedName(name)] = try status(fields["isPermissionGranted"], for: name)
            }
            return (nil, statuses)
        case .object(let fields):
            guard case .array(let pairs)? = fields["pairValues"] else {
                throw PermissionStoreError.invalidImport(reason: "the object has no pairValues array")
            }
            for pair in pairs {
                guard case .object(let entry) = pair, case .string(let name)? = entry["first"] else {
                    throw PermissionStoreError.invalidImport(reason: "a pair lacks first")
                }
                statuses[try checkedName(name)] = try status(entry["second"], for: name)
            }
            var appId: String?
            if case .string(let id)? = fields["miniAppId"] { appId = id }
            return (appId, statuses)
        default:
            throw PermissionStoreError.invalidImport(reason: "it is neither an array nor an object")
        }
    }

    private static func checkedName(_ name: String) throws -> String {
        guard PermissionName.isValid(name) else { throw PermissionStoreError.invalidName(name) }
        return PermissionName.full(name)
    }

    private static func status(_ value: JSONValue?, for name: String) throws -> PermissionStatus {
        switch value {
        case .string(let text)?:
            guard let status = PermissionStatus(rawValue: text) else {
                throw PermissionStoreError.invalidImport(reason: "\(name) has status '\(Sanitizer.printable(text, limit: 40))', not ALLOWED, DENIED or PERMISSION_NOT_AVAILABLE")
            }
            return status
        case .bool(let granted)?:
            return granted ? .allowed : .denied
        default:
            throw PermissionStoreError.invalidImport(reason: "\(name) has no status")
        }
    }

    private struct FullEntry: Encodable {
        var permissionName: String
        var isPermissionGranted: String
        var permissionDescription: String
    }

    private struct Pair: Encodable {
        var first: String
        var second: String
    }

    private struct PairsDocument: Encodable {
        var miniAppId: String
        var pairValues: [Pair]
    }
}

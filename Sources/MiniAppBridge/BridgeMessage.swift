public import Foundation
public import MiniAppCore

/// One call a mini-app makes through its bridge: the SDK's `exec(action, param, onSuccess, onError)`.
public struct BridgeMessage: Sendable, Equatable {
    /// The id the app's bridge answers by.
    public var id: String
    /// What the app asks for, such as `getUserName`.
    public var action: String
    /// The action's parameters (`null` when it takes none).
    public var param: JSONValue

    /// A message with the given id, action and parameters.
    public init(id: String, action: String, param: JSONValue = .null) {
        self.id = id
        self.action = action
        self.param = param
    }

    /// Decodes `{"id": string, "action": string, "param": any}` from an app, within `limits`.
    public init<Bytes: Collection<UInt8>>(decoding bytes: Bytes, limits: BridgeLimits = BridgeLimits()) throws(BridgeMessageError) {
        guard bytes.count <= limits.maxMessageBytes else { throw .tooLarge(bytes: bytes.count, limit: limits.maxMessageBytes) }
        guard let document = JSONReader.value(bytes, maxDepth: limits.maxDepth) else { throw .malformed("it is not one JSON document within \(limits.maxDepth) levels") }
        guard case .object(let fields) = document else { throw .malformed("it is not a JSON object") }
        guard case .string(let id)? = fields["id"], !id.isEmpty, id.utf8.count <= limits.maxIdBytes else {
            throw .malformed("\"id\" must be a string of 1 to \(limits.maxIdBytes) bytes")
        }
        guard case .string(let action)? = fields["action"], Self.isActionName(action) else {
            throw .malformed("\"action\" must be a name of 1 to 64 letters, digits or _")
        }
        self.init(id: id, action: action, param: fields["param"] ?? .null)
    }

    /// Whether `name` can be an action: 1 to 64 ASCII letters, digits or `_`.
    package static func isActionName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}

/// How big and deep a bridge message may be: a mini-app's input is untrusted.
public struct BridgeLimits: Sendable, Equatable {
    /// The largest message, in bytes. 8 MiB by default: `shareInfo` sends an image's bytes as a JSON
    /// array of numbers (about 3.6 bytes of message per byte of image), so an image of about 2 MB fits,
    /// as does a secure-storage write at the default storage limit.
    public var maxMessageBytes: Int
    /// The deepest nesting of arrays and objects.
    public var maxDepth: Int
    /// The longest message id, in bytes.
    public var maxIdBytes: Int

    /// Limits of `maxMessageBytes`, `maxDepth` and `maxIdBytes`.
    public init(maxMessageBytes: Int = 8 << 20, maxDepth: Int = 16, maxIdBytes: Int = 128) {
        self.maxMessageBytes = maxMessageBytes
        self.maxDepth = maxDepth
        self.maxIdBytes = maxIdBytes
    }
}

/// A bridge message that cannot be read.
public enum BridgeMessageError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The message is bigger than the limit.
    case tooLarge(bytes: Int, limit: Int)
    /// The message is not the expected JSON object.
    case malformed(String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            return "the bridge message has \(bytes) bytes, over the limit of \(limit): send less in one call"
        case .malformed(let reason):
            return "the bridge message is malformed: \(reason)"
        }
    }

    public var errorDescription: String? { description }

    /// The error as the app's bridge receives it.
    public var failure: BridgeFailure {
        switch self {
        case .tooLarge: BridgeFailure(type: "MessageTooLargeError", message: description)
        case .malformed: BridgeFailure(type: "MalformedMessageError", message: description)
        }
    }
}

/// What the host answers to one message: a value (text, often JSON) or an error.
public enum BridgeOutcome: Sendable, Equatable {
    /// The action succeeded; the SDK receives this text (`nil`: no value, such as a missing storage item).
    case success(String?)
    /// The action failed; the SDK receives ``BridgeFailure/text``.
    case failure(BridgeFailure)
}

/// An error answer in the form the SDK parses (`parseMiniAppError`): `{"type": ..., "message": ...}`.
public struct BridgeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's type, such as `AudienceNotSupportedError` or `SecureStorageFullError`.
    public var type: String
    /// What failed, for the app's developer.
    public var message: String

    /// A failure of `type` saying `message`.
    public init(type: String, message: String) {
        self.type = type
        self.message = message
    }

    /// The JSON text the app's bridge receives.
    public var text: String { JSONWriter.text(.object(["type": .string(type), "message": .string(message)])) }

    public var description: String { "\(type): \(message)" }

    /// The host does not provide `action`.
    public static func notSupported(_ action: String) -> BridgeFailure {
        BridgeFailure(type: "NotSupportedError", message: "this host does not support '\(action)'")
    }

    /// The user has not allowed `permission` for the app, or the manifest does not declare it.
    public static func denied(_ permission: KnownPermission, declared: Bool) -> BridgeFailure {
        BridgeFailure(
            type: "userDenied",
            message: declared
                ? "the user has not allowed \(permission.rawValue) for this mini-app"
                : "the mini-app's manifest does not declare \(permission.rawValue)"
        )
    }

    /// The parameters of `action` are not what it takes.
    public static func invalidParameters(_ action: String, _ expected: String) -> BridgeFailure {
        BridgeFailure(type: "InvalidParametersError", message: "'\(action)' takes \(expected)")
    }
}

/// The host's answer to one message, by the message's id.
public struct BridgeReply: Sendable, Equatable {
    /// The id of the message answered.
    public var id: String
    /// The answer.
    public var outcome: BridgeOutcome

    /// The answer `outcome` to message `id`.
    public init(id: String, outcome: BridgeOutcome) {
        self.id = id
        self.outcome = outcome
    }

    /// `{"id": ..., "success": text}` or `{"id": ..., "error": text}`: what a transport sends back.
    public var json: String {
        switch outcome {
        case .success(let value): JSONWriter.text(.object(["id": .string(id), "success": value.map { .string($0) } ?? .null]))
        case .failure(let failure): JSONWriter.text(.object(["id": .string(id), "error": .string(failure.text)]))
        }
    }
}

/// An event the host sends to a running app: the SDK receives it as a DOM `CustomEvent` named `name`
/// whose `detail.message` is `message`.
public struct BridgeEvent: Sendable, Equatable {
    /// The event's type, such as `miniappsecurestorageready` or an app-domain name like `online_status`.
    public var name: String
    /// The event's message.
    public var message: String

    /// An event `name` carrying `message`.
    public init(name: String, message: String = "") {
        self.name = name
        self.message = message
    }

    /// The secure storage is ready.
    public static let secureStorageReady = BridgeEvent(name: "miniappsecurestorageready")

    /// `{"name": ..., "message": ...}`: what a transport sends to the app.
    public var json: String { JSONWriter.text(.object(["name": .string(name), "message": .string(message)])) }
}

public import Foundation
public import MiniAppCore

/// Where the permission decisions live: a SQLite file (the embedded default) or a PostgreSQL
/// database that a fleet of hosts shares.
///
/// Its `description` never shows a password.
public enum PermissionStoreLocation: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite file, created when first written.
    case sqlite(path: String)
    /// A PostgreSQL database.
    case postgres(PostgresLocation)

    /// The SQLite store in a cache directory (`<cache-dir>/permissions.sqlite`).
    public static func cache(_ directory: String) -> PermissionStoreLocation {
        .sqlite(path: directory + "/permissions.sqlite")
    }

    /// `text` as a location: a `postgres://` or `postgresql://` URL, else a file path (made absolute
    /// against `currentDirectory`). A URL without a password takes `PGPASSWORD` from `environment`.
    public static func parse(_ text: String, environment: [String: String] = [:], currentDirectory: String = FileManager.default.currentDirectoryPath) throws(PermissionStoreError) -> PermissionStoreLocation {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return .postgres(try PostgresLocation(url: text, environment: environment))
        }
        if lowered.contains("://") {
            throw .invalidLocation(reason: "'\(Sanitizer.printable(text.prefix(while: { $0 != ":" }).description, limit: 20))' is not a store this library knows: use a file path or a postgres:// URL")
        }
        guard !text.isEmpty, !text.utf8.contains(0) else { throw .invalidLocation(reason: "the path is empty") }
        return .sqlite(path: text.hasPrefix("/") ? text : currentDirectory + "/" + text)
    }

    public var description: String {
        switch self {
        case .sqlite(let path): return path
        case .postgres(let location): return location.description
        }
    }
}

/// A PostgreSQL database given as a libpq-style URL:
/// `postgres://user[:password]@host[:port]/database[?sslmode=...&host=/socket/dir&search_path=...]`.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// How TLS is used, as libpq's `sslmode`.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Never.
        case disable
        /// When the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// Always, without checking the certificate.
        case require
        /// Always, with the certificate checked against the system's trust store and the host name.
        case verifyFull = "verify-full"
    }

    /// The user to connect as.
    public var user: String
    /// The password: a secret, never part of ``description``.
    public var password: String?
    /// The host name or address, for TCP; `nil` with a Unix socket.
    public var host: String?
    /// The folder holding the server's Unix socket (`?host=/path`), instead of TCP.
    public var socketDirectory: String?
    /// The server's port.
    public var port: Int
    /// The database's name.
    public var database: String
    /// Whether and how TLS is used.
    public var sslMode: SSLMode
    /// The schema the tables go in (`?search_path=`), else the server's default.
    public var searchPath: String?
    /// `?application_name=`, shown in the server's activity views.
    public var applicationName: String?
    /// `?connect_timeout=` in seconds, overriding the configured connect timeout.
    public var connectTimeoutSeconds: Int?

    /// Parses `url`; the password comes from the URL (percent-decoded) or, when it has none, from
    /// `PGPASSWORD` in `environment`. No other libpq variable is read.
    public init(url: String, environment: [String: String] = [:]) throws(PermissionStoreError) {
        func invalid(_ reason: String) -> PermissionStoreError { .invalidLocation(reason: reason) }
        guard let schemeEnd = url.range(of: "://") else { throw invalid("it is not a URL") }
        var rest = Substring(url[schemeEnd.upperBound...])
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard !rest.contains("#") else { throw invalid("it has a fragment (#...)") }
        let authority: Substring
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        } else {
            authority = rest
        }
        func decode(_ part: Substring, _ what: String) throws(PermissionStoreError) -> String {
            guard let decoded = String(part).removingPercentEncoding else { throw invalid("its \(what) is not validly percent-encoded") }
            guard !decoded.utf8.contains(0) else { throw invalid("its \(what) contains a NUL byte") }
            return decoded
        }
        var hostPort = authority
        var user: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try decode(userInfo[..<colon], "user name")
                password = try decode(userInfo[userInfo.index(after: colon)...], "password")
            } else {
                user = try decode(userInfo, "user name")
            }
        }
        var host: String?
        var port = 5432
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("its IPv6 address has no closing ]") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw invalid("its host is malformed") }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = try decode(hostPort[..<colon], "host")
            portText = hostPort[hostPort.index(after: colon)...]
        } else if !hostPort.isEmpty {
            host = try decode(hostPort, "host")
        }
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { throw invalid("its port '\(Sanitizer.printable(String(portText), limit: 12))' is not a number from 1 to 65535") }
            port = value
        }
        self.sslMode = .prefer
        var socketDirectory: String?
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try decode(parts[0], "query")
            let value = parts.count > 1 ? try decode(parts[1], "query") : ""
            switch name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw invalid("sslmode '\(Sanitizer.printable(value, limit: 20))' is not one of disable, prefer, require, verify-full")
                }
                sslMode = mode
            case "host":
                if value.hasPrefix("/") { socketDirectory = value } else if !value.isEmpty { host = value }
            case "port":
                guard let value = Int(value), (1...65535).contains(value) else { throw invalid("its port is not a number from 1 to 65535") }
                port = value
            case "search_path":
                searchPath = value.isEmpty ? nil : value
            case "application_name":
                applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds >= 0 else { throw invalid("connect_timeout is not a number of seconds") }
                connectTimeoutSeconds = seconds == 0 ? nil : seconds
            case "user":
                user = value
            case "password":
                password = value
            case "dbname":
                path = Substring(value)
            default:
                throw invalid("the parameter '\(Sanitizer.printable(name, limit: 40))' is not supported: use sslmode, host, port, search_path, application_name or connect_timeout")
            }
        }
        // A host given as a percent-encoded socket folder (`postgres://%2Fvar%2Frun%2Fpostgresql/db`), as libpq reads it.
        if let named = host, named.hasPrefix("/") {
            socketDirectory = named
            host = nil
        }
        if host == nil, socketDirectory == nil { socketDirectory = "/var/run/postgresql" }
        let database = try decode(path, "database name")
        let resolvedUser = user.flatMap { $0.isEmpty ? nil : $0 } ?? ProcessEnvironment.userName()
        guard !resolvedUser.isEmpty else { throw invalid("it names no user") }
        self.user = resolvedUser
        self.password = password ?? environment["PGPASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        self.host = socketDirectory == nil ? host : nil
        self.socketDirectory = socketDirectory
        self.port = port
        self.database = database.isEmpty ? resolvedUser : database
    }

    /// The Unix socket's path: `<folder>/.s.PGSQL.<port>`.
    public var socketPath: String? { socketDirectory.map { $0 + "/.s.PGSQL.\(port)" } }

    /// The URL without its password.
    public var description: String {
        func encode(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/"))) ?? text
        }
        let printableHost = host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? ""
        var text = "postgres://\(encode(user))@\(printableHost)\(host == nil ? "" : ":\(port)")/\(encode(database))"
        var query: [String] = []
        if let socketDirectory { query.append("host=\(socketDirectory)") }
        if host == nil, port != 5432 { query.append("port=\(port)") }
        if sslMode != .prefer { query.append("sslmode=\(sslMode.rawValue)") }
        if let searchPath { query.append("search_path=\(searchPath)") }
        if !query.isEmpty { text += "?" + query.joined(separator: "&") }
        return Sanitizer.printable(text, limit: 300)
    }
}

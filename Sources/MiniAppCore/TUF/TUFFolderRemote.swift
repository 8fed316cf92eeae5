import Foundation

/// A TUF repository in local folders (a mounted share, a copy of a registry): metadata files in one,
/// targets in another, read as the HTTP remote reads them. A target path that would leave its
/// folder (`..`, an absolute path) is a file the repository does not have.
package struct TUFFolderRemote: TUFRemote {
    package let metadataFolder: String
    package let targetsFolder: String
    private let executor: BlockingExecutor

    package init(metadataFolder: String, targetsFolder: String, executor: BlockingExecutor) {
        self.metadataFolder = metadataFolder
        self.targetsFolder = targetsFolder
        self.executor = executor
    }

    package func metadata(_ name: String, limit: Int) async throws -> [UInt8]? {
        guard !name.contains("/") else { return nil }
        return try await read(metadataFolder + "/" + name, limit: limit)
    }

    package func target(_ path: String, limit: Int) async throws -> [UInt8]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !path.hasPrefix("/"), !segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { return nil }
        return try await read(targetsFolder + "/" + path, limit: limit)
    }

    private func read(_ path: String, limit: Int) async throws -> [UInt8]? {
        try await executor.run { () throws -> [UInt8]? in
            switch FileReading.read(path, limit: limit) {
            case .contents(let bytes): return bytes
            case .missing, .notARegularFile: return nil
            case .unreadable(EFBIG): throw TUFTooLong(limit: limit)
            case .unreadable(let code): throw FileReading.Failure(description: "\(path): " + String(cString: strerror(code)))
            }
        }
    }
}

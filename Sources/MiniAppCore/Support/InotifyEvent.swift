import Glibc
internal import CMiniAppSystem

/// One event read from an inotify descriptor, for the watchers of lock files and of development
/// folders.
package struct InotifyEvent: Sendable {
    /// The watch it came from (-1 for `IN_Q_OVERFLOW`).
    package let watch: Int32
    /// What happened: `IN_*` bits.
    package let mask: UInt32
    /// The name of the file in a watched folder it is about; empty when it is about the watched file or
    /// folder itself.
    package let name: String

    /// How many bytes a buffer for ``readAll(from:using:)`` needs at least: one event with the longest name.
    package static let minimumBuffer = MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1

    /// The events waiting on the non-blocking inotify `descriptor`, read through `buffer` until none is
    /// left.
    package static func readAll(from descriptor: Int32, using buffer: UnsafeMutableRawBufferPointer) -> [InotifyEvent] {
        let header = MemoryLayout<inotify_event>.size
        var events: [InotifyEvent] = []
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            guard count > 0 else { return events }
            var offset = 0
            while offset + header <= count {
                let event = UnsafeRawBufferPointer(buffer).loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let name = buffer[(offset + header)..<min(count, offset + header + Int(event.len))]
                events.append(InotifyEvent(watch: event.wd, mask: event.mask, name: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)))
                offset += header + Int(event.len)
            }
        }
    }
}

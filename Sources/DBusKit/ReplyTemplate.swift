import CDBus
import Glibc

/// A method return marshalled once and sent as copies: each answer costs a copy of the message and a new
/// reply serial, not a body built again.
///
/// libdbus adds a header field by rewriting the header; it changes a fixed-size field that is already there
/// in place. So the copies are made from a return already addressed to the last caller and already carrying
/// a reply serial: a call from that caller changes only the serial, and a call from another caller
/// readdresses the template once.
final class ReplyTemplate {
    /// The body, addressed to nobody.
    private let blank: OpaquePointer
    /// `blank` with a destination (the last caller's) and a reply serial; nil until the first answer.
    private var addressed: OpaquePointer?

    init(_ values: [DBusValue]) throws(DBusError) {
        guard let raw = dbus_message_new(CDBus_MESSAGE_TYPE_METHOD_RETURN) else { throw .failed("out of memory") }
        dbus_message_set_no_reply(raw, 1)
        do throws(DBusError) {
            try MessageWriter.append(values, to: raw)
        } catch {
            dbus_message_unref(raw)
            throw error
        }
        // Only now: once every property is set, a throw would run deinit too.
        blank = raw
    }

    deinit {
        dbus_message_unref(blank)
        if let addressed { dbus_message_unref(addressed) }
    }

    /// A return of this body answering `call` (its serial, to its sender), for the caller to send; nil when out of memory.
    func answer(_ call: OpaquePointer) -> OpaquePointer? {
        let sender = dbus_message_get_sender(call)
        let serial = dbus_message_get_serial(call)
        guard let template = self.template(for: sender), let copy = dbus_message_copy(template) else { return nil }
        guard dbus_message_set_reply_serial(copy, serial) != 0 else {
            dbus_message_unref(copy)
            return nil
        }
        return copy
    }

    /// The addressed template for `sender` (without a sender: a peer connection, no destination).
    private func template(for sender: UnsafePointer<CChar>?) -> OpaquePointer? {
        if let addressed, Self.same(dbus_message_get_destination(addressed), sender) { return addressed }
        guard let fresh = dbus_message_copy(blank) else { return nil }
        // Any serial but 0 (which libdbus refuses): every copy gets its call's own in its place.
        guard dbus_message_set_reply_serial(fresh, 1) != 0,
            sender.map({ dbus_message_set_destination(fresh, $0) != 0 }) ?? true
        else {
            dbus_message_unref(fresh)
            return nil
        }
        if let addressed { dbus_message_unref(addressed) }
        addressed = fresh
        return fresh
    }

    private static func same(_ a: UnsafePointer<CChar>?, _ b: UnsafePointer<CChar>?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return strcmp(a, b) == 0
    }
}

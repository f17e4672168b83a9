import CDBus

/// Checks libdbus applies with an assertion (and abort) when appending; we
/// apply them first and turn failures into errors.
enum Validation {
    static func isValidString(_ s: String) -> Bool {
        // Swift strings are UTF-8 already; an embedded NUL would be silently cut by C.
        !s.utf8.contains(0)
    }

    static func isValidObjectPath(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_validate_path($0, nil) } != 0
    }

    static func isValidSignature(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_signature_validate($0, nil) } != 0
    }

    static func isValidInterfaceName(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_validate_interface($0, nil) } != 0
    }

    static func isValidMemberName(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_validate_member($0, nil) } != 0
    }

    static func isValidErrorName(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_validate_error_name($0, nil) } != 0
    }

    static func isValidBusName(_ s: String) -> Bool {
        isValidString(s) && s.withCString { dbus_validate_bus_name($0, nil) } != 0
    }
}

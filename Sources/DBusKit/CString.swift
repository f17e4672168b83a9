import Glibc

extension String {
    /// Compares with a C string without building a Swift string from it.
    func equals(_ cString: UnsafePointer<CChar>) -> Bool {
        withCString { strcmp($0, cString) == 0 }
    }
}

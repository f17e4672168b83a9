import NetAddress

/// A target's core in memory its driver owns, read in place: the one unsafe storage of the cores, kept here.
///
/// Measured (issue 55, the simulation's 5,000 random scenarios on one core, the same seeds): with the core a plain
/// stored property of the driver, 105 one-family scenarios a second; lent from here, 261–269. A struct stored in a
/// class is copied whole before each read of it that the optimizer cannot see through, and the worlds read a
/// target's core (some 2 KB, with its two paths) at every step.
@usableFromInline struct LentTargetCore {
    @usableFromInline let pointer: UnsafeMutablePointer<TargetCore>

    init(_ core: TargetCore) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: core)
    }

    /// Ends the storage; the driver calls it once, as it ends.
    func free() {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    /// `family`'s path, lent in place like the core.
    @inlinable func path(_ family: IPFamily) -> UnsafePointer<PathCore> {
        let offset = family == .v4 ? Self.ipv4Offset : Self.ipv6Offset
        return UnsafeRawPointer(pointer).advanced(by: offset).assumingMemoryBound(to: PathCore.self)
    }

    // Both are stored properties of TargetCore, which always have an offset.
    @usableFromInline static let ipv4Offset = MemoryLayout<TargetCore>.offset(of: \TargetCore.ipv4)!
    @usableFromInline static let ipv6Offset = MemoryLayout<TargetCore>.offset(of: \TargetCore.ipv6)!
}

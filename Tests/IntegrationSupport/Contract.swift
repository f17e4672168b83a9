import MonitorContract

/// The Monitor's properties, short for the tests that name them.
public typealias P = MonitorContract.Property

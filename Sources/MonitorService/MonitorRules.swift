// The rules without I/O this module's drivers serve, for its users as one import.
@_exported import MonitorRules

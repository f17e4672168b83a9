// The rules the drivers here carry out are everyone's who uses the probes: importing Probe brings them.
@_exported import ProbeRules

#!/bin/sh
# The engines' lines, and the share in files that import neither Glibc nor EventLoop:
# the sans-I/O cores and the pure parsers, testable without sockets, threads or a clock.
cd "$(dirname "$0")/.." || exit 1
pure=0 all=0
for file in Sources/ProbeRules/*.swift Sources/Probe/*.swift Sources/Reachability/*.swift \
            Sources/MonitorService/MonitorCore.swift Sources/MonitorService/TargetCore.swift Sources/MonitorService/ConnectivityMonitor.swift \
            Sources/MonitorService/StatusRules.swift; do
    lines=$(wc -l < "$file")
    all=$((all + lines))
    if grep -qE '^import (Glibc|EventLoop)$' "$file"; then
        kind=driver
    else
        kind=pure
        pure=$((pure + lines))
    fi
    printf '%6d  %-6s %s\n' "$lines" "$kind" "$file"
done
echo "engines: $all lines, $pure in pure files ($((100 * pure / all)) %)"

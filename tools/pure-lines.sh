#!/bin/sh
# The engines' lines by target: the pure targets (the rules without I/O, which tools/purity.sh
# holds to importing only one another) and the drivers around them.
cd "$(dirname "$0")/.." || exit 1
pure=0 all=0
count() {
    kind=$1; shift
    for file in "$@"; do
        lines=$(wc -l < "$file")
        all=$((all + lines))
        [ "$kind" = pure ] && pure=$((pure + lines))
        printf '%6d  %-6s %s\n' "$lines" "$kind" "$file"
    done
}
count pure Sources/NetAddress/*.swift Sources/ProbeRules/*.swift Sources/ReachabilityRules/*.swift Sources/MonitorRules/*.swift
count driver Sources/NetCore/*.swift Sources/Probe/*.swift Sources/Reachability/*.swift Sources/TrafficCensus/*.swift Sources/HTTPCheck/*.swift \
             Sources/DaemonWorlds/*.swift
echo "engines: $all lines, $pure in pure targets ($((100 * pure / all)) %)"

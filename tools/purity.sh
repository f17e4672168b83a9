#!/bin/sh
# The pure targets (the rules without I/O) may import one another and nothing else: no Glibc,
# no Foundation, no Dispatch, no C module, no EventLoop, no DBusKit. Package.swift declares
# the same graph; this also catches an import that builds only because the module happens
# to lie in the build directory.
cd "$(dirname "$0")/.." || exit 1
pure="NetAddress Timekeeping ProbeRules ReachabilityRules MonitorRules"
status=0
for target in $pure; do
    for module in $(grep -hoE '^(@_exported )?import [A-Za-z_]+' "Sources/$target"/*.swift | awk '{print $NF}' | sort -u); do
        case " $pure " in
            *" $module "*) ;;
            *) echo "Sources/$target imports $module, which is not a pure target"; status=1 ;;
        esac
    done
done
# Each pure target has a test target of its own (make check runs them), which links no driver:
# the rules, TestTime (how tests write time), NetCore (addresses read from text), and CLinux (headers to
# hold numbers to) at most.
for target in $pure; do
    tests="Tests/${target}Tests"
    if [ ! -d "$tests" ]; then
        echo "$target has no test target $tests"; status=1; continue
    fi
    for module in $(grep -hoE '^(@testable )?import [A-Za-z_]+' "$tests"/*.swift | awk '{print $NF}' | sort -u); do
        case " $pure TestTime NetCore CLinux Glibc XCTest " in
            *" $module "*) ;;
            *) echo "$tests imports $module, a driver"; status=1 ;;
        esac
    done
done
# The daemon's worlds carry out what the drivers ask; they know nothing of the D-Bus face above them
# (its settings' names, its model, its objects): a target's world reads a TargetConfiguration.
for module in $(grep -hoE '^(@_exported )?import [A-Za-z_]+' Sources/DaemonWorlds/*.swift | awk '{print $NF}' | sort -u); do
    case " MonitorService MonitorContract DBusKit CDBus Cellular Foundation " in
        *" $module "*) echo "Sources/DaemonWorlds imports $module, which is the D-Bus face's"; status=1 ;;
    esac
done
# The simulation's tests link no driver and no daemon: the simulation and the rules it runs.
for module in $(grep -hoE '^(@testable )?import [A-Za-z_]+' Tests/SimulationTests/*.swift | awk '{print $NF}' | sort -u); do
    case " Simulation $pure TestTime XCTest " in
        *" $module "*) ;;
        *) echo "Tests/SimulationTests imports $module, which is not the simulation's"; status=1 ;;
    esac
done
# The worlds' and the helper's tests stand below the D-Bus face, as their targets do.
for tests in DaemonWorldsTests HelperProcessTests; do
    for module in $(grep -hoE '^(@testable )?import [A-Za-z_]+' "Tests/$tests"/*.swift | awk '{print $NF}' | sort -u); do
        case " MonitorService MonitorContract DBusKit CDBus Cellular " in
            *" $module "*) echo "Tests/$tests imports $module, which is the D-Bus face's"; status=1 ;;
        esac
    done
done
[ "$1" = --list ] && [ $status -eq 0 ] && echo $pure
exit $status

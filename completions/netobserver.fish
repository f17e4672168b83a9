# fish completion for netobserver(1)

set -l commands status monitor check wait set metrics targets add remove help

complete -c netobserver -f
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -l system -d 'the system bus'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -l session -d 'the session bus'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -l address -r -d 'a D-Bus address'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -l target -x -a '(timeout 1 netobserver targets 2>/dev/null | string replace -rf "^/org/netobserver/Monitor/(\d+) .*" \'$1\')' -d 'the target addressed'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a targets -d 'every target: path, host, status'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a add -d 'a new target probing HOST'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a remove -d 'remove an added target'
complete -c netobserver -n "__fish_seen_subcommand_from remove" -x -a '(timeout 1 netobserver targets 2>/dev/null | string replace -rf "^/org/netobserver/Monitor/(\d+) .*" \'$1\')'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a status -d 'one screen: status, host, interface, round trip, loss, reason'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a monitor -d 'a line per change until interrupted'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a check -d 'probe now, print the status'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a wait -d 'exit 0 once reachable, 1 on timeout'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a set -d 'set a property'
complete -c netobserver -n "not __fish_seen_subcommand_from $commands" -a metrics -d 'Prometheus text format'
complete -c netobserver -n "__fish_seen_subcommand_from status" -l json -d 'the properties as JSON'
complete -c netobserver -n "__fish_seen_subcommand_from monitor" -l json -d 'one JSON object per change'
complete -c netobserver -n "__fish_seen_subcommand_from monitor" -l format -x -a 'json waybar i3blocks polybar' -d 'a status bar format'
complete -c netobserver -n "__fish_seen_subcommand_from monitor" -l all -d 'every target'
complete -c netobserver -n "__fish_seen_subcommand_from wait" -l timeout -x -d 'seconds'
complete -c netobserver -n "__fish_seen_subcommand_from wait check" -l require -x -a 'full portal limited' -d 'the least Connectivity that counts'
complete -c netobserver -n "__fish_seen_subcommand_from metrics" -l textfile -r -F -d 'write atomically to this file'
complete -c netobserver -n "__fish_seen_subcommand_from set; and not __fish_seen_subcommand_from host interval timeout failures recoveries family check-url evidence" -a 'host interval timeout failures recoveries family check-url evidence'
complete -c netobserver -n "__fish_seen_subcommand_from set; and __fish_seen_subcommand_from family" -a 'any ipv4 ipv6'
complete -c netobserver -n "__fish_seen_subcommand_from set; and __fish_seen_subcommand_from evidence" -a 'probes traffic'

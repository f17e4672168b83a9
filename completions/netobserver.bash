# bash completion for netobserver(1)

# The added targets' numbers, when the service answers (on the bus the command line names).
_netobserver_targets() {
    local bus=() i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            --system|--session) bus+=("${COMP_WORDS[i]}") ;;
            --address) bus+=(--address "${COMP_WORDS[i+1]}") ;;
        esac
    done
    timeout 1 netobserver "${bus[@]}" targets 2>/dev/null | sed -n 's|^/org/netobserver/Monitor/\([0-9]*\) .*|\1|p'
}

_netobserver() {
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="status monitor check wait set metrics history targets add remove help"
    local bus_flags="--system --session --address --target --help"

    # The subcommand: the first word after the bus flags.
    local command="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            --address|--target) ((i++)) ;;
            --*) ;;
            *) command=${COMP_WORDS[i]}; break ;;
        esac
    done

    case $prev in
        --address) return 0 ;;
        --target) COMPREPLY=($(compgen -W "$(_netobserver_targets)" -- "$cur")); return 0 ;;
        --format) COMPREPLY=($(compgen -W "json waybar i3blocks polybar" -- "$cur")); return 0 ;;
        --textfile) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --timeout) return 0 ;;
        --require) COMPREPLY=($(compgen -W "full portal limited" -- "$cur")); return 0 ;;
    esac

    case $command in
        "") COMPREPLY=($(compgen -W "$commands $bus_flags" -- "$cur")) ;;
        status) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
        monitor) COMPREPLY=($(compgen -W "--json --format --all" -- "$cur")) ;;
        remove) [ "$prev" = remove ] && COMPREPLY=($(compgen -W "$(_netobserver_targets)" -- "$cur")) ;;
        wait) COMPREPLY=($(compgen -W "--timeout --require" -- "$cur")) ;;
        check) COMPREPLY=($(compgen -W "--require" -- "$cur")) ;;
        metrics) COMPREPLY=($(compgen -W "--textfile" -- "$cur")) ;;
        history) COMPREPLY=($(compgen -W "--limit --json" -- "$cur")) ;;
        set)
            if [ "$prev" = set ]; then
                COMPREPLY=($(compgen -W "host interval timeout failures recoveries family check-url secure-check-url check-echo dns-probe-zone evidence probing idle-interval" -- "$cur"))
            elif [ "$prev" = family ]; then
                COMPREPLY=($(compgen -W "any ipv4 ipv6" -- "$cur"))
            elif [ "$prev" = evidence ]; then
                COMPREPLY=($(compgen -W "probes traffic" -- "$cur"))
            elif [ "$prev" = probing ]; then
                COMPREPLY=($(compgen -W "adaptive steady" -- "$cur"))
            elif [ "$prev" = check-echo ]; then
                COMPREPLY=($(compgen -W "true false" -- "$cur"))
            fi
            ;;
    esac
    return 0
}
complete -F _netobserver netobserver

# bash completion for netobserver(1)

_netobserver() {
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="status monitor check wait set metrics help"
    local bus_flags="--system --session --address --help"

    # The subcommand: the first word after the bus flags.
    local command="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            --address) ((i++)) ;;
            --*) ;;
            *) command=${COMP_WORDS[i]}; break ;;
        esac
    done

    case $prev in
        --address) return 0 ;;
        --format) COMPREPLY=($(compgen -W "json waybar i3blocks polybar" -- "$cur")); return 0 ;;
        --textfile) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --timeout) return 0 ;;
    esac

    case $command in
        "") COMPREPLY=($(compgen -W "$commands $bus_flags" -- "$cur")) ;;
        status) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
        monitor) COMPREPLY=($(compgen -W "--json --format" -- "$cur")) ;;
        wait) COMPREPLY=($(compgen -W "--timeout" -- "$cur")) ;;
        metrics) COMPREPLY=($(compgen -W "--textfile" -- "$cur")) ;;
        set)
            if [ "$prev" = set ]; then
                COMPREPLY=($(compgen -W "host interval timeout failures recoveries family" -- "$cur"))
            elif [ "$prev" = family ]; then
                COMPREPLY=($(compgen -W "any ipv4 ipv6" -- "$cur"))
            fi
            ;;
    esac
    return 0
}
complete -F _netobserver netobserver

# bash completion for vigil(1) and vigild(8).
#
# Completes subcommands, each subcommand's options, the values of options
# that take one of a few words (--notify, --streams, --for, ...), files and
# directories where an option takes one, and monitor ids and labels where a
# command takes an ID (asked of the engine with `vigil __complete-ids`,
# which prints nothing when no engine answers). After "--" the words are the
# command to run: completed as commands and files.
#
# Install: copy to /usr/share/bash-completion/completions/vigil (and link
# vigild to it), or `source` it from ~/.bashrc.

_vigil_commands="start list ps ls status output logs events wait stop restart run watch sessions up down groups ignore ignored unignore setup reload policy engine shutdown mcp hook help"
_vigil_common="--socket --session --json --help -h"

# The options of one subcommand (kept in step with `vigil COMMAND --help`;
# tests/functional/test_cli_completion.py checks that).
_vigil_options()
{
    case "$1" in
        start) echo "--label --description --pattern -e --no-patterns --no-incidents --envelope
                     --streams --notify --mode --policy --idle-timeout --timeout --persistent
                     --restart --max-restarts --restart-backoff --quiet-after --cwd --env --pass-env
                     --pass-env-all --caller-path --shell --no-line-buffer --wait-for
                     --wait-timeout --file --ws --from
                     --ready-log --ready-tcp --ready-http --ready-timeout --health-interval
                     --wait-for-ready" ;;
        list|ps|ls) echo "--all -a --limit" ;;
        status) echo "--show-start --show-env" ;;
        output) echo "--matched --unmatched --stdout --stderr --since --limit -n --tail
                      --incident -i --follow -f --all -a" ;;
        logs) echo "--stdout --stderr --offset --limit --tail -n --follow -f" ;;
        events) echo "--since" ;;
        wait) echo "--for --timeout --since" ;;
        stop) echo "--signal --grace" ;;
        restart) echo "--grace --wait-for --wait-timeout" ;;
        run) echo "--timeout --lines --cwd --env --pass-env --pass-env-all --caller-path --shell \
                   --no-line-buffer" ;;
        watch) echo "--since --oneline --nats --engine --durable --stream" ;;
        ignore) echo "--for --always --reason" ;;
        sessions) echo "--all -a" ;;
        setup) echo "--project --user --dry-run -n --remove --yes -y" ;;
        mcp) echo "--profile --delivery --tool-names --no-spawn --config" ;;
        hook) echo "--wait" ;;
        shutdown) echo "--timeout -t" ;;
        policy) echo "--sample --notification" ;;
    esac
}

# The ids and labels of the session's monitors, from the engine; the
# --socket and --session already typed are passed on.
_vigil_ids()
{
    local -a conn=()
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case "${COMP_WORDS[i]}" in
            --socket|--session) conn+=("${COMP_WORDS[i]}" "${COMP_WORDS[i+1]}") ;;
            --socket=*|--session=*) conn+=("${COMP_WORDS[i]}") ;;
        esac
    done
    "${COMP_WORDS[0]}" "${conn[@]}" __complete-ids 2>/dev/null
}

_vigil()
{
    local cur prev cmd="" i dashdash=0
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev=""
    ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD-1]}"

    # The subcommand: the first word that is not an option or an option's value.
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            --) dashdash=$i; break ;;
            --socket|--session) ((i++)) ;;
            -*) ;;
            *) if [[ -z "$cmd" ]]; then cmd="${COMP_WORDS[i]}"; fi ;;
        esac
    done

    # After "--": the command to run and its arguments.
    if ((dashdash > 0)); then
        if ((COMP_CWORD == dashdash + 1)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
    fi

    # An option's value.
    case "$prev" in
        --socket|--config) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --cwd) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
        --file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --from) COMPREPLY=($(compgen -W "end start" -- "$cur")); return 0 ;;
        --ws) COMPREPLY=($(compgen -W "ws://127.0.0.1:" -- "$cur")); return 0 ;;
        --notify) COMPREPLY=($(compgen -W "auto matches lines exit none" -- "$cur")); return 0 ;;
        --streams) COMPREPLY=($(compgen -W "both stdout stderr" -- "$cur")); return 0 ;;
        --mode) COMPREPLY=($(compgen -W "idle live_safe" -- "$cur")); return 0 ;;
        --envelope) COMPREPLY=($(compgen -W "readable compact" -- "$cur")); return 0 ;;
        --for) COMPREPLY=($(compgen -W "exit match" -- "$cur")); return 0 ;;
        --signal) COMPREPLY=($(compgen -W "TERM INT HUP KILL QUIT USR1 USR2" -- "$cur")); return 0 ;;
        --restart) COMPREPLY=($(compgen -W "no on-failure always" -- "$cur")); return 0 ;;
        --timeout|--idle-timeout|--grace|--wait-timeout|--restart-backoff|--quiet-after|--ready-timeout|--health-interval)
            COMPREPLY=($(compgen -W "500ms 5s 30s 1m 5m 30m 1h" -- "$cur")); return 0 ;;
        --profile) COMPREPLY=($(compgen -W "vigil watch_process process monitor hermes" -- "$cur")); return 0 ;;
        --delivery) COMPREPLY=($(compgen -W "auto channel piggyback poll" -- "$cur")); return 0 ;;
        --tool-names) COMPREPLY=($(compgen -W "exact underscore" -- "$cur")); return 0 ;;
        --sample) COMPREPLY=($(compgen -W "crash loop exit lines overload" -- "$cur")); return 0 ;;
        --notification) return 0 ;;
        --nats) COMPREPLY=($(compgen -W "nats://127.0.0.1:4222" -- "$cur")); return 0 ;;
        --session|--label|--description|--pattern|-e|--policy|--env|--pass-env|--wait-for|--since|\
        --limit|-n|--tail|--incident|-i|--offset|--lines|--max-restarts|--engine|--durable|--stream)
            return 0 ;;
    esac

    if [[ -z "$cmd" ]]; then
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "$_vigil_common --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_vigil_commands" -- "$cur"))
        fi
        return 0
    fi

    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_vigil_options "$cmd") $_vigil_common" -- "$cur"))
        return 0
    fi

    case "$cmd" in
        help) COMPREPLY=($(compgen -W "$_vigil_commands" -- "$cur")) ;;
        status|output|logs|events|wait|stop|restart)
            COMPREPLY=($(compgen -W "$(_vigil_ids)" -- "$cur")) ;;
        start|run) COMPREPLY=($(compgen -W "--" -- "$cur")) ;;
        setup) COMPREPLY=($(compgen -W "claude-code codex gemini opencode cursor goose" -- "$cur")) ;;
        engine) COMPREPLY=($(compgen -W "status" -- "$cur")) ;;
        policy)
            if [[ " ${COMP_WORDS[*]} " == *" try "* || " ${COMP_WORDS[*]} " == *" test "* ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
            else
                COMPREPLY=($(compgen -W "try test" -- "$cur"))
            fi ;;
    esac
    return 0
}

# vigild's options (kept in step with `vigild --help`;
# tests/functional/test_cli_completion.py checks that).
_vigild_options()
{
    echo "--listen --stdio --config --no-config --state-dir --no-state --check-config --daemon
          --log-file --log-max-bytes --nats --nats-engine --nats-creds
          --nats-tls-ca --nats-tls-cert --nats-tls-key --version --help"
}

_vigild()
{
    local cur prev
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --config|--check-config|--listen|--log-file|--nats-creds|--nats-tls-ca|--nats-tls-cert|--nats-tls-key) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --state-dir) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
        --log-max-bytes|--nats|--nats-engine) return 0 ;;
    esac
    COMPREPLY=($(compgen -W "$(_vigild_options)" -- "$cur"))
    return 0
}

complete -F _vigil vigil
complete -F _vigild vigild

# fish completion for vigil(1): subcommands, each subcommand's
# options and their values, and monitor ids and labels where a command takes
# an ID (from `vigil __complete-ids`, which prints nothing when no engine
# answers).
#
# Install: copy to ~/.config/fish/completions/vigil.fish (vigild's are in
# vigild.fish: fish loads a command's completions from the file of its name).

set -l vigil_commands start list ps ls status output logs events wait stop restart run watch sessions up down groups ignore ignored unignore setup reload policy engine shutdown mcp hook help
set -l vigil_id_commands status output logs events wait stop restart

function __vigil_ids
    set -l conn
    set -l words (commandline -opc)
    for i in (seq 2 (count $words))
        switch $words[$i]
            case --socket --session
                set -l next (math $i + 1)
                if test $next -le (count $words)
                    set conn $conn $words[$i] $words[$next]
                end
            case '--socket=*' '--session=*'
                set conn $conn $words[$i]
        end
    end
    $words[1] $conn __complete-ids 2>/dev/null
end

# Common options, anywhere.
complete -c vigil -l socket -r -F -d 'the engine socket'
complete -c vigil -l session -x -d 'the session to work in'
complete -c vigil -l json -d 'print the answer as JSON'
complete -c vigil -s h -l help -d 'show the help'
complete -c vigil -n __fish_use_subcommand -l version -d 'print the version'

# Subcommands.
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a start -d 'start a command in the background'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a list -d "list the session's monitors"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a ps -d "list the session's monitors (as list)"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a ls -d "list the session's monitors (as list)"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a status -d 'show one monitor in detail'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a output -d "show a monitor's lines"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a logs -d "write a monitor's raw bytes"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a events -d "show a monitor's event log"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a wait -d 'wait for a monitor to end or match'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a stop -d 'stop a monitor'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a restart -d 'stop a monitor and start it again'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a run -d 'run a command in the foreground'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a watch -d "print the session's notifications"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a sessions -d "list the engine's sessions"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a up -d "start a group of the config's monitors"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a down -d "stop a group of the config's monitors"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a groups -d "list the config's groups and their monitors"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a ignore -d 'stop being told about a known incident'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a ignored -d 'list the fingerprints ignored here'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a unignore -d 'be told about a fingerprint again'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a setup -d 'set an agent harness up'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a reload -d 'make the engine read its config again'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a policy -d 'try a policy offline, or run its examples'
complete -c vigil -n '__fish_seen_subcommand_from policy; and not __fish_seen_subcommand_from try test' -f -a 'try test'
complete -c vigil -n '__fish_seen_subcommand_from policy' -l sample -x -a 'crash loop exit lines overload' -d 'the sample notification'
complete -c vigil -n '__fish_seen_subcommand_from policy' -l notification -x -d 'a notification as JSON'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a engine -d 'whether an engine runs on the socket, and which'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a shutdown -d 'end the engine (and every monitor), and wait for its end'
complete -c vigil -f -n '__fish_seen_subcommand_from engine' -a status -d 'whether an engine runs, and which'
complete -c vigil -n '__fish_seen_subcommand_from shutdown' -s t -l timeout -x -d "how long to wait for the engine's end"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a mcp -d 'serve the engine as an MCP server'
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a hook -d "answer a harness's hook"
complete -c vigil -f -n "not __fish_seen_subcommand_from $vigil_commands" -a help -d 'show the help of a command'
complete -c vigil -f -n '__fish_seen_subcommand_from help' -a "$vigil_commands"

# Monitor ids and labels.
complete -c vigil -f -n "__fish_seen_subcommand_from $vigil_id_commands" -a '(__vigil_ids)'

# start and run.
set -l durations '500ms 5s 30s 1m 5m 30m 1h'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l cwd -x -a '(__fish_complete_directories)' -d 'where it runs'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l env -x -d 'set K=V'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l shell -d 'run CMD with /bin/sh -c'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l no-line-buffer -d 'leave stdout buffered as the program chooses'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l pass-env -x -a '(set -xn)' -d 'pass your variable NAME (or PREFIX*) on'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l pass-env-all -d 'pass your whole environment on, but what monitor.env_deny refuses'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l caller-path -d 'find the program in your PATH and start that absolute path'
complete -c vigil -n '__fish_seen_subcommand_from start run' -l timeout -x -a "$durations" -d 'stop it after this long'
complete -c vigil -n '__fish_seen_subcommand_from start' -l label -x -d 'a name for it'
complete -c vigil -n '__fish_seen_subcommand_from start' -l description -x -d 'a note kept with it'
complete -c vigil -n '__fish_seen_subcommand_from start' -s e -l pattern -x -d 'a PCRE2 pattern'
complete -c vigil -n '__fish_seen_subcommand_from start' -l no-patterns -d 'match nothing'
complete -c vigil -n '__fish_seen_subcommand_from start' -l no-incidents -d 'every matching line on its own'
complete -c vigil -n '__fish_seen_subcommand_from start' -l envelope -x -a 'readable compact' -d 'the notification frame'
complete -c vigil -n '__fish_seen_subcommand_from start' -l streams -x -a 'both stdout stderr' -d 'the streams patterns apply to'
complete -c vigil -n '__fish_seen_subcommand_from start' -l notify -x -a 'auto matches lines exit none' -d 'what the session is told'
complete -c vigil -n '__fish_seen_subcommand_from start' -l mode -x -a 'idle live_safe' -d 'how notifications are delivered'
complete -c vigil -n '__fish_seen_subcommand_from start' -l policy -x -d 'the policy'
complete -c vigil -n '__fish_seen_subcommand_from start' -l idle-timeout -x -a "$durations" -d 'stop it after this long without output'
complete -c vigil -n '__fish_seen_subcommand_from start' -l restart -x -a 'no on-failure always' -d 'start it again when it ends by itself'
complete -c vigil -n '__fish_seen_subcommand_from start' -l max-restarts -x -d 'restarts in a row before it gives up'
complete -c vigil -n '__fish_seen_subcommand_from start' -l restart-backoff -x -a "$durations" -d 'the delay before the first restart'
complete -c vigil -n '__fish_seen_subcommand_from start' -l quiet-after -x -a "$durations" -d 'tell once when it prints no line for this long'
complete -c vigil -n '__fish_seen_subcommand_from start' -l persistent -d 'no runtime cap'
complete -c vigil -n '__fish_seen_subcommand_from start' -l file -r -F -d 'follow this file instead of running a command'
complete -c vigil -n '__fish_seen_subcommand_from start' -l ws -x -d 'follow a WebSocket on loopback instead of running a command'
complete -c vigil -n '__fish_seen_subcommand_from start' -l from -x -a 'end start' -d 'with --file: where to start reading'
complete -c vigil -n '__fish_seen_subcommand_from start restart' -l wait-for -x -d 'wait for a line matching this regex'
complete -c vigil -n '__fish_seen_subcommand_from start restart' -l wait-timeout -x -a "$durations" -d 'how long --wait-for waits'
complete -c vigil -n '__fish_seen_subcommand_from start' -l ready-log -x -d 'ready when a line matches this regex'
complete -c vigil -n '__fish_seen_subcommand_from start' -l ready-tcp -x -d 'ready when this loopback port accepts'
complete -c vigil -n '__fish_seen_subcommand_from start' -l ready-http -x -d 'ready when this loopback URL answers 200..399'
complete -c vigil -n '__fish_seen_subcommand_from start' -l ready-timeout -x -a "$durations" -d 'not ready after this long'
complete -c vigil -n '__fish_seen_subcommand_from start' -l health-interval -x -a "$durations" -d 'once ready, probe this often'
complete -c vigil -n '__fish_seen_subcommand_from start' -l wait-for-ready -d 'wait until the engine says it is ready'
complete -c vigil -n '__fish_seen_subcommand_from run' -l lines -x -d 'with --json: last lines per stream'

# The other subcommands.
complete -c vigil -n '__fish_seen_subcommand_from list ps ls' -s a -l all -d 'include ended monitors'
complete -c vigil -n '__fish_seen_subcommand_from list ps ls' -l limit -x -d 'at most N'
complete -c vigil -n '__fish_seen_subcommand_from status' -l show-start -d 'also how it was started, env values hidden'
complete -c vigil -n '__fish_seen_subcommand_from status' -l show-env -d 'also how it was started, with the env values'
complete -c vigil -n '__fish_seen_subcommand_from output' -l matched -d 'only matched lines'
complete -c vigil -n '__fish_seen_subcommand_from output' -l unmatched -d 'only unmatched lines'
complete -c vigil -n '__fish_seen_subcommand_from output logs' -l stdout -d 'only stdout'
complete -c vigil -n '__fish_seen_subcommand_from output logs' -l stderr -d 'only stderr'
complete -c vigil -n '__fish_seen_subcommand_from output events wait' -l since -x -d 'only after N'
complete -c vigil -n '__fish_seen_subcommand_from output' -s n -l limit -x -d 'the last N lines'
complete -c vigil -n '__fish_seen_subcommand_from output' -l tail -x -d 'the last N lines'
complete -c vigil -n '__fish_seen_subcommand_from logs' -s n -l tail -x -d 'the last N lines'
complete -c vigil -n '__fish_seen_subcommand_from logs' -s f -l follow -d 'follow every monitor, each line after its label'
complete -c vigil -n '__fish_seen_subcommand_from output' -s a -l all -d 'every monitor, each line after its label'
complete -c vigil -n '__fish_seen_subcommand_from output' -s i -l incident -x -d 'the lines of incident N'
complete -c vigil -n '__fish_seen_subcommand_from output' -s f -l follow -d 'keep printing new lines'
complete -c vigil -n '__fish_seen_subcommand_from logs' -l offset -x -d 'start at byte N'
complete -c vigil -n '__fish_seen_subcommand_from logs' -l limit -x -d 'at most N bytes'
complete -c vigil -n '__fish_seen_subcommand_from wait' -l for -x -a 'exit match' -d 'what to wait for'
complete -c vigil -n '__fish_seen_subcommand_from wait' -l timeout -x -a "$durations" -d 'give up after this long'
complete -c vigil -n '__fish_seen_subcommand_from stop' -l signal -x -a 'TERM INT HUP KILL QUIT USR1 USR2' -d 'the signal to send'
complete -c vigil -n '__fish_seen_subcommand_from stop restart' -l grace -x -a "$durations" -d 'how long before SIGKILL'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l since -x -d 'replay after seq N'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l oneline -d 'one line per notification'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l nats -x -a 'nats://127.0.0.1:4222' -d 'read from a NATS JetStream'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l engine -x -d 'with --nats: only this engine'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l durable -x -d 'with --nats: the durable consumer'
complete -c vigil -n '__fish_seen_subcommand_from watch' -l stream -x -d 'with --nats: the stream'
complete -c vigil -n '__fish_seen_subcommand_from sessions' -s a -l all -d 'include ended monitors'
complete -c vigil -f -n '__fish_seen_subcommand_from setup' -a 'claude-code codex gemini opencode cursor goose'
complete -c vigil -n '__fish_seen_subcommand_from setup' -l project -d "the project's files"
complete -c vigil -n '__fish_seen_subcommand_from setup' -l user -d 'your own files'
complete -c vigil -n '__fish_seen_subcommand_from setup' -s n -l dry-run -d 'print the diff, write nothing'
complete -c vigil -n '__fish_seen_subcommand_from setup' -l remove -d 'take out what setup put in'
complete -c vigil -n '__fish_seen_subcommand_from setup' -s y -l yes -d 'write your vigil config without asking'
complete -c vigil -n '__fish_seen_subcommand_from mcp' -l profile -x -a 'vigil watch_process process monitor hermes' -d 'tool profile'
complete -c vigil -n '__fish_seen_subcommand_from mcp' -l delivery -x -a 'auto channel piggyback poll' -d 'how notifications reach the agent'
complete -c vigil -n '__fish_seen_subcommand_from mcp' -l tool-names -x -a 'exact underscore' -d 'tool naming style'
complete -c vigil -n '__fish_seen_subcommand_from mcp' -l no-spawn -d 'never start an engine'
complete -c vigil -n '__fish_seen_subcommand_from mcp' -l config -r -F -d 'config for a spawned engine'
complete -c vigil -f -n '__fish_seen_subcommand_from hook' -l wait -d "at a turn's end, wait for a notification"
complete -c vigil -n '__fish_seen_subcommand_from ignore' -l for -x -a "$durations" -d 'how long it stays ignored'
complete -c vigil -n '__fish_seen_subcommand_from ignore' -l always -d 'ignore it until unignored'
complete -c vigil -n '__fish_seen_subcommand_from ignore' -l reason -x -d 'why it is known and harmless'

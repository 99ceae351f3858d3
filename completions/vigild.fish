# fish completion for vigild(8), the engine: its options, and files or
# directories where an option takes one.
#
# Install: copy to ~/.config/fish/completions/vigild.fish.

complete -c vigild -l listen -r -F -d 'serve on a Unix socket'
complete -c vigild -l stdio -d 'serve one connection on stdin/stdout'
complete -c vigild -l no-config -d 'no config file: every start is denied'
complete -c vigild -l config -r -F -d 'the Lua configuration'
complete -c vigild -l state-dir -x -a '(__fish_complete_directories)' -d 'the state directory'
complete -c vigild -l no-state -d 'no state directory'
complete -c vigild -l check-config -r -F -d 'check a configuration and exit'
complete -c vigild -l daemon -d 'go into the background, returning once the engine listens'
complete -c vigild -l log-file -r -F -d 'log to FILE instead of stderr'
complete -c vigild -l log-max-bytes -x -d 'the log file size at which it moves to FILE.1'
complete -c vigild -l nats -x -d 'also publish into NATS JetStream (URL)'
complete -c vigild -l nats-engine -x -d "this engine's name in the fleet"
complete -c vigild -l nats-creds -r -F -d 'the NATS credentials file'
complete -c vigild -l nats-tls-ca -r -F -d 'the CA certificates to trust for the NATS server'
complete -c vigild -l nats-tls-cert -r -F -d 'the client certificate for NATS TLS'
complete -c vigild -l nats-tls-key -r -F -d "the client certificate's key"
complete -c vigild -l version -d 'print the version'
complete -c vigild -s h -l help -d 'show the help'

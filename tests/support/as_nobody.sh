#!/bin/sh
# Runs a test program as user nobody when the tests run as root, so that
# what root is exempt from (RLIMIT_NPROC, the max_processes fallback) can be
# shown; runs it as is otherwise (or without setpriv).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
  exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
fi
exec "$@"

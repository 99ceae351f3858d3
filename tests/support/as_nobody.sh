#!/bin/sh
# as_nobody.sh PROGRAM [ARG...]: runs a test program as user nobody when the
# tests run as root, so that what root is exempt from (RLIMIT_NPROC, the
# max_processes fallback) can be shown; runs it as is otherwise (or without
# setpriv). Exits with the program's status.
#
# nobody may be unable to reach the checkout (a clone in /root, which is
# mode 0700 on Debian), and so the program and the helpers it starts. Both
# are copied into a private directory made for the run that nobody can run
# programs from: in $TMPDIR, else /tmp, else /var/tmp, the first where a
# probe run as nobody works (not a directory it cannot enter, nor one on a
# noexec mount). The helpers are the executable child_* of
# $VIGIL_TEST_HELPERS (default: the program's directory); the program runs
# in the copy, with VIGIL_TEST_HELPERS pointing there. The directory is
# removed when the program ends, whatever its status.

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1; then
  exec "$@"
fi
if [ $# -lt 1 ]; then
  echo "usage: as_nobody.sh PROGRAM [ARG...]" >&2
  exit 2
fi

nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

program=$1
shift
helpers=${VIGIL_TEST_HELPERS:-$(dirname "$program")}

# Removes the run's directory at the end; a signal ends the script (the
# program, in the foreground, has had it too).
dir=
trap 'if [ -n "$dir" ]; then rm -rf "$dir"; fi' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

tried=
for base in "${TMPDIR:-/tmp}" /tmp /var/tmp; do
  case " $tried " in *" $base "*) continue ;; esac
  tried="$tried $base"
  dir=$(mktemp -d "$base/vigil-as-nobody.XXXXXX" 2>/dev/null) || { dir=; continue; }
  chmod 0755 "$dir"
  # The probe is started by a shell already running as nobody: setpriv's
  # own exec may still pass where nobody's later ones do not.
  if cp /bin/true "$dir/probe" && nobody /bin/sh -c 'exec "$1"' sh "$dir/probe" 2>/dev/null
  then
    rm -f "$dir/probe"
    break
  fi
  rm -rf "$dir"
  dir=
done
if [ -z "$dir" ]; then
  echo "as_nobody.sh: no directory nobody (uid 65534) can run programs from (tried:$tried)" >&2
  exit 1
fi

name=$(basename "$program")
cp "$program" "$dir/$name" || exit 1
for helper in "$helpers"/child_*; do
  if [ -f "$helper" ] && [ -x "$helper" ]; then
    cp "$helper" "$dir/" || exit 1
  fi
done
chmod -R a+rX "$dir"

cd "$dir" || exit 1
VIGIL_TEST_HELPERS=$dir nobody "$dir/$name" "$@"

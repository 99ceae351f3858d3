#!/bin/sh
# Runs after every other test: fails if a process that carries this test
# run's tag (VIGIL_TEST_RUN=<tag> in its environment, inherited from the test
# that started it) is still alive. Zombies count as gone.
tag="$1"
found=""
for env in /proc/[0-9]*/environ; do
  pid=${env#/proc/}; pid=${pid%/environ}
  [ "$pid" = "$$" ] && continue
  if tr '\0' '\n' < "$env" 2>/dev/null | grep -qx "VIGIL_TEST_RUN=$tag"; then
    state=$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null)
    [ "$state" = "Z" ] && continue
    [ -z "$state" ] && continue
    found="$found $pid($(tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | cut -c1-60))"
  fi
done
if [ -n "$found" ]; then
  echo "FAIL: processes started by the tests are still alive:$found"
  exit 1
fi
echo "ok: no process started by the tests is still alive"

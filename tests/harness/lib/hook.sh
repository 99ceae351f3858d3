#!/bin/sh
# A harness hook for the tests (lib/hooks.mjs): hook.sh DIR EVENT.
#
# Records what the harness gave the hook (its stdin, as
# DIR/inputs/EVENT.STAMP-PID.json, and the names of its environment
# variables, as DIR/env/EVENT.STAMP-PID), then answers with the oldest
# answer the test queued for EVENT (DIR/answers/EVENT/N.code with N.out,
# N.err and N.gate beside it): waits until the file named in N.gate exists
# when there is one, prints N.out on stdout and N.err on stderr, and exits
# with the status in N.code. Each answer is used once (taken by an atomic
# rename, so two hooks run at once never share one). With no answer queued
# it prints nothing and exits 0.
dir=$1
event=$2
id="$(date +%s%N)-$$"
mkdir -p "$dir/inputs" "$dir/env"
cat > "$dir/inputs/.$event.$id.part"
mv "$dir/inputs/.$event.$id.part" "$dir/inputs/$event.$id.json"
env | sed 's/=.*//' | sort > "$dir/env/$event.$id"
for code in "$dir/answers/$event"/*.code; do
  [ -e "$code" ] || break
  taken="$code.taken-$id"
  mv "$code" "$taken" 2>/dev/null || continue
  base=${code%.code}
  if [ -f "$base.gate" ]; then
    gate=$(cat "$base.gate")
    # The gate is a file the test creates: nothing else announces it here.
    until [ -e "$gate" ]; do sleep 0.05; done
  fi
  [ -f "$base.out" ] && cat "$base.out"
  [ -f "$base.err" ] && cat "$base.err" >&2
  exit "$(cat "$taken")"
done
exit 0

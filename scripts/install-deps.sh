#!/usr/bin/env bash
# Installs the Debian packages vigil needs to build, test and benchmark, and
# nothing else. Idempotent: when every package is already present it prints
# nothing and touches nothing. Runs as root (apt-get); under another user it
# uses sudo when there is one, else it says what to install.
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # toolchain
  libuv1-dev libpcre2-dev libmsgpack-dev liblua5.4-dev  # the four libraries
  libjansson-dev                        # JSON for the command-line client and vigil mcp
  python3 python3-msgpack               # the example gateway and functional tests
  strace                                # bench/idle counts the engine's wake-ups with it
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-deps: not root and no sudo; please install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

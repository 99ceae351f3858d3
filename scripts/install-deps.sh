#!/usr/bin/env bash
# Installs what vigil needs to build, test and benchmark, and nothing else:
# the Debian packages, then the Node packages (tests/mcp, tests/harness,
# clients/node, each pinned by its package-lock.json). Idempotent: when
# everything is already present it prints nothing and touches nothing. Runs
# as root (apt-get); under another user it uses sudo when there is one, else
# it says what to install.
#
#   scripts/install-deps.sh [--debian-only]
#
# --debian-only skips the Node packages (bench/run.sh needs none of them).
set -euo pipefail
cd "$(dirname "$0")/.."

node_packages=1
for a in "$@"; do
  case "$a" in
    --debian-only) node_packages=0 ;;
    *) echo "install-deps: unknown argument \"$a\" (--debian-only)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config      # toolchain
  libuv1-dev libpcre2-dev libmsgpack-dev liblua5.4-dev  # the four libraries
  libjansson-dev                        # JSON for the command-line client and vigil mcp
  libnats-dev nats-server               # a fleet over NATS JetStream (docs/fleet.md) and its tests
  python3 python3-msgpack               # the example gateway and functional tests
  python3-cryptography openssl          # the Python client's NATS creds and nkeys (Ed25519), its TLS tests' certificates
  python3-pip python3-setuptools python3-wheel  # pip install ./clients/python, offline (its test)
  strace                                # bench/idle counts the engine's wake-ups with it
  musl-tools                            # vigil-keeper is linked against musl (its private memory; CMakeLists.txt)
  scdoc                                 # the man pages (docs/man/*.scd)
  tmux                                  # tests/harness: Claude Code's interactive mode needs a terminal
  zsh fish                              # completions/: their scripts are parsed and asked (test_cli_completion.py)
  file lintian                          # scripts/package.sh (CPack reads binaries with file) and its test
)
# Node.js and npm for the MCP tests, unless a Node.js with npm is already
# installed (another packaging of Node, such as NodeSource's, provides npm
# itself and conflicts with Debian's npm package).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
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
fi

# The Node packages, exactly as each lockfile pins them: the MCP SDK client
# the MCP tests use (tests/mcp), the four agent harness CLIs the harness
# tests drive (tests/harness: Claude Code, Codex, Gemini CLI, OpenCode; their
# native binaries come as per-platform optional packages, and the install
# scripts package.json's allowScripts approves copy them into place), and
# the Node client library's two dependencies (clients/node: msgpack, and
# NATS.js for its FleetSubscriber, docs/fleet.md). Again only when
# the installed tree is older than the lockfile (npm writes
# node_modules/.package-lock.json).
[ "$node_packages" -eq 1 ] || exit 0
for dir in tests/mcp tests/harness clients/node; do
  [ -f "$dir/package-lock.json" ] || continue
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "install-deps: installing $dir's Node packages (npm ci)" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
done

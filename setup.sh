#!/usr/bin/env bash
# Set storlab up on a fresh Debian machine: install the Debian packages it uses,
# then build the release binary (target/release/storlab). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

# fio: the peer that bench/ compares against. time: CPU accounting in bench/.
PACKAGES=(fio time)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install the Rust toolchain (rustup) and run ./setup.sh again" >&2
  exit 1
fi
cargo build --release --locked
echo "setup: built target/release/storlab"

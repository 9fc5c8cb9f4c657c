#!/usr/bin/env bash
# Set storlab up on a fresh Debian machine: install the Debian packages it uses,
# then build the release binary (target/release/storlab). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

# fio: the peer that bench/ compares against. time: CPU accounting in bench/. jq: bench/*.sh read JSON.
# The protocol lab (storlab lab): nfs-ganesha + nfs-ganesha-vfs (NFSv3/v4), rpcbind (NFSv3),
# tgt (iSCSI), nbdkit (NBD), iproute2 + util-linux (namespaces); its readiness probes and
# tests use qemu-utils (qemu-img/qemu-io), libiscsi-bin (iscsi-inq), libnfs-utils (nfs-ls/nfs-cat).
# libsqlite3-dev: the results database (rusqlite links the system SQLite). chromium: the HTML report test.
# libssl-dev + pkg-config: the agent's optional TLS (system OpenSSL); openssl: the TLS test makes a
# certificate. g++: libFuzzer (the fuzz targets' runtime, built by tests/fuzz_targets.rs).
# openssh-client + openssh-server: `storlab fleet deploy` drives ssh, and tests/deploy.rs runs
# sshd in the lab's host namespaces (started and stopped by the test; the package's own
# service is not needed). binutils: readelf, tests/deploy.rs reads the libraries the binary links.
# prometheus: tests/fleet.rs scrapes a controller's /metrics with it (its own configuration, port
# and storage, started and stopped by the test; the package's own service is not needed).
PACKAGES=(fio time jq nfs-ganesha nfs-ganesha-vfs libiscsi-dev libiscsi-bin tgt libnbd-dev nbdkit rpcbind iproute2 util-linux qemu-utils nbd-server istgt libnfs-utils libsqlite3-dev chromium libssl-dev pkg-config openssl g++ openssh-client openssh-server binutils prometheus)
# kubernetes-client: Debian's kubectl, with which tests/deploy.rs decodes the Kubernetes
# manifest offline. Some machine images ship Google's `kubectl` package instead, which owns
# /usr/bin/kubectl (the two cannot both be installed): there that kubectl is used.
command -v kubectl >/dev/null || PACKAGES+=(kubernetes-client)

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

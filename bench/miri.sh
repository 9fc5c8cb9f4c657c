#!/bin/sh
# The unit tests of storlab's pure code under Miri (docs/unsafe.md): XDR and
# the NFS reply parsers, the fleet wire messages and the agent's request
# decoding, histograms and snapshots, job files and settings, the FUSE wire
# structs, and the buffer lease (the null backend through a Lane). Miri
# reports undefined behaviour, out-of-bounds and use-after-free accesses and
# data races in the code these tests run.
#
# Needs the nightly toolchain with Miri:
#   rustup toolchain install nightly && rustup +nightly component add miri rust-src
# Run from the repository root: sh bench/miri.sh
# The first run builds Miri's sysroot and every dependency (several minutes on
# two cores); later runs reuse them (target/miri).
set -eu
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "bench/miri.sh: cargo +nightly miri is not installed:" >&2
    echo "  rustup toolchain install nightly && rustup +nightly component add miri rust-src" >&2
    exit 2
fi
# Job files under examples/ are read from disk: isolation off lets them be.
export MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-disable-isolation"
# Left out, being far too slow under Miri (over 15 minutes each): three
# histogram tests that only do arithmetic over 100,000 or more recorded values
# (no parsing, no unsafe), and the two tests that parse the whole built-in
# catalogue or every example job file (the job-file parser itself is covered
# by the other job-file tests).
exec cargo +nightly miri test --lib -- \
    --skip every_value_falls_inside_its_bucket \
    --skip merge_equals_recording_into_one \
    --skip percentiles_uniform \
    --skip prepare_round_trips \
    --skip examples_parse \
    backends::nfs::xdr \
    backends::nfs::v3 \
    backends::nfs::v4 \
    fleet::wire \
    fleet::agent::decode \
    stats::histogram \
    stats::snapshot \
    workload::jobfile \
    workload::settings \
    media::fuse::abi \
    backends::null \
    "$@"

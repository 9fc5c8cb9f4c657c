#!/usr/bin/env bash
# Is the media layer a bottleneck? The same lab brought up twice, once with
# no media layer (`--media none`: every server opens the backing file in
# /dev/shm itself, as labs did before media) and once on the `ram` medium
# (the store served through storlab's FUSE media server, page cache on);
# each protocol runs 4 KiB random reads at QD 32 on both, and the ratio
# ram / none says what the layer costs.
#
# usage: sudo bench/media_ceiling.sh
# env:   STORLAB (binary, default target/release/storlab), RUNTIME (s, 8),
#        RAMP (s, 2), TARGETS ("block nfs3 nfs4 iscsi nbd"), BS (4k), QD (32)
set -euo pipefail

STORLAB=${STORLAB:-target/release/storlab}
RUNTIME=${RUNTIME:-8}
RAMP=${RAMP:-2}
TARGETS=${TARGETS:-"block nfs3 nfs4 iscsi nbd"}
BS=${BS:-4k}
QD=${QD:-32}
WORK=$(mktemp -d /tmp/storlab-media-ceiling.XXXXXX)
STATE=

down() {
    if [ -n "$STATE" ]; then
        "$STORLAB" lab down --state-dir "$STATE" >/dev/null 2>&1 || true
        STATE=
    fi
}
trap 'down; rm -rf "$WORK"' EXIT INT TERM

declare -A IOPS CPU
for media in none ram; do
    STATE=$WORK/lab-$media
    "$STORLAB" lab up --state-dir "$STATE" --net loopback --media "$media" --size 1g \
        --nfs-port 32049 --mountd-port 32050 --iscsi-port 32260 --nbd-port 32809 >/dev/null
    for t in $TARGETS; do
        url=$("$STORLAB" lab status --state-dir "$STATE" --json | jq -r ".targets.\"$t\"")
        json=$WORK/run.json
        "$STORLAB" run --no-db -q --target "$url" --rw randread --bs "$BS" --iodepth "$QD" \
            --direct 1 --ramp_time "$RAMP" --runtime "$RUNTIME" --json "$json" >/dev/null 2>&1
        IOPS[$media.$t]=$(jq -r '.jobs[0].points[0].summary.read.iops | floor' "$json")
        CPU[$media.$t]=$(jq -r '.jobs[0].points[0].summary.cpu.client_us_per_io // .jobs[0].points[0].summary.cpu.us_per_io // "-"' "$json")
    done
    down
done

printf '%-8s %12s %12s %8s\n' target "IOPS none" "IOPS ram" "ram/none"
for t in $TARGETS; do
    n=${IOPS[none.$t]}
    r=${IOPS[ram.$t]}
    printf '%-8s %12s %12s %8s\n' "$t" "$n" "$r" "$(awk -v a="$r" -v b="$n" 'BEGIN { printf "%.2f", a / b }')"
done

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
LABS=()

down() {
    for st in "${LABS[@]}"; do
        "$STORLAB" lab down --state-dir "$st" >/dev/null 2>&1 || true
    done
    LABS=()
}
trap 'down; rm -rf "$WORK"' EXIT INT TERM

# Both labs up at once (their own ports), so each target's two runs are
# back to back: a shared machine's load moves both alike. Each pair runs
# twice, in the order none ram ram none, and the means are compared.
port=32000
for media in none ram; do
    st=$WORK/lab-$media
    LABS+=("$st")
    "$STORLAB" lab up --state-dir "$st" --net loopback --media "$media" --size 1g \
        --nfs-port $((port + 49)) --mountd-port $((port + 50)) --iscsi-port $((port + 260)) \
        --nbd-port $((port + 809)) >/dev/null
    port=$((port + 1000))
done

iops() { # media target
    local url json=$WORK/run.json
    url=$("$STORLAB" lab status --state-dir "$WORK/lab-$1" --json | jq -r ".targets.\"$2\"")
    "$STORLAB" run --no-db -q --target "$url" --rw randread --bs "$BS" --iodepth "$QD" \
        --direct 1 --ramp_time "$RAMP" --runtime "$RUNTIME" --json "$json" >/dev/null 2>&1
    jq -r '.jobs[0].points[0].summary.read.iops | floor' "$json"
}

printf '%-8s %12s %12s %8s\n' target "IOPS none" "IOPS ram" "ram/none"
for t in $TARGETS; do
    n1=$(iops none "$t"); r1=$(iops ram "$t"); r2=$(iops ram "$t"); n2=$(iops none "$t")
    n=$(( (n1 + n2) / 2 )); r=$(( (r1 + r2) / 2 ))
    printf '%-8s %12s %12s %8s\n' "$t" "$n" "$r" "$(awk -v a="$r" -v b="$n" 'BEGIN { printf "%.2f", a / b }')"
done

#!/usr/bin/env bash
# The emulated media against their own model: for each preset, serve a store
# through storlab's FUSE media server and run 4 KiB random reads at QD 1, 8
# and 32 (O_DIRECT); print measured IOPS and mean latency beside the model's
# prediction (`storlab media --predict`) and the ratio.
#
# usage: sudo bench/media_model.sh [PRESET...]   (default: every preset)
# env:   STORLAB (binary, default target/release/storlab), RUNTIME (s, 8),
#        RAMP (s, 2), SIZE (store, 1g), QDS ("1 8 32")
set -euo pipefail

STORLAB=${STORLAB:-target/release/storlab}
RUNTIME=${RUNTIME:-8}
RAMP=${RAMP:-2}
SIZE=${SIZE:-1g}
QDS=${QDS:-"1 8 32"}
PRESETS=("$@")
if [ ${#PRESETS[@]} -eq 0 ]; then
    mapfile -t PRESETS < <("$STORLAB" media | awk '{print $1}')
fi

WORK=$(mktemp -d /tmp/storlab-media-bench.XXXXXX)
BACKING=$WORK/backing
MNT=$WORK/mnt
mkdir -p "$BACKING" "$MNT"
SERVER=

stop_server() {
    if [ -n "$SERVER" ]; then
        kill -TERM "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
        SERVER=
    fi
    if mountpoint -q "$MNT"; then
        fusermount3 -u "$MNT" 2>/dev/null || fusermount -u "$MNT" 2>/dev/null || umount -l "$MNT" || true
    fi
}
cleanup() {
    stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# The store is created and filled once, beside the media (not through them:
# filling 1 GiB through a 7 MB/s destage would take minutes); every preset
# then reuses it.
"$STORLAB" run --target "file:$BACKING/store" --rw randread --bs 4k --iodepth 1 \
    --size "$SIZE" --runtime 1 --no-db >/dev/null 2>&1

# One measured run: prints "IOPS MEAN_LATENCY_US".
measure() { # preset qd
    local json=$WORK/run.json
    "$STORLAB" run --target "file:$MNT/store" --rw randread --bs 4k --iodepth "$2" \
        --direct 1 --size "$SIZE" --ramp_time "$RAMP" --runtime "$RUNTIME" \
        --no-db --json "$json" >/dev/null 2>&1
    jq -r '.jobs[0].points[0].summary.read | "\(.iops) \(.lat_mean_us)"' "$json"
}

printf '%-16s %4s %12s %12s %7s %14s %14s %7s\n' preset qd "IOPS" "model IOPS" ratio \
    "latency us" "model lat us" ratio
for p in "${PRESETS[@]}"; do
    "$STORLAB" media-serve --backing "$BACKING" --mount "$MNT" --media "$p" \
        --ready-file "$WORK/ready" >"$WORK/serve-$p.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 100); do
        [ -s "$WORK/ready" ] && break
        kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve-$p.log"; exit 1; }
        sleep 0.1
    done
    [ -s "$WORK/ready" ] || { echo "media-serve $p did not start" >&2; exit 1; }
    for qd in $QDS; do
        read -r iops lat < <(measure "$p" "$qd")
        if pred=$("$STORLAB" media --predict "$p" --bs 4k --iodepth "$qd" --size "$SIZE" \
            --json 2>/dev/null); then
            read -r miops mlat < <(jq -r '.[0] | "\(.iops) \(.mean_latency_us)"' <<<"$pred")
        else
            miops=- mlat=-
        fi
        awk -v p="$p" -v q="$qd" -v i="$iops" -v l="$lat" -v mi="$miops" -v ml="$mlat" 'BEGIN {
            if (mi == "-") printf "%-16s %4d %12.0f %12s %7s %14.1f %14s %7s\n", p, q, i, "-", "-", l, "-", "-";
            else printf "%-16s %4d %12.0f %12.0f %7.2f %14.1f %14.1f %7.2f\n", p, q, i, mi, i / mi, l, ml, l / ml }'
    done
    stop_server
    rm -f "$WORK/ready"
    # The server's own account of how late it sent the held replies.
    grep -o 'late.*' "$WORK/serve-$p.log" | sed "s/^/    $p: /" >&2 || true
done

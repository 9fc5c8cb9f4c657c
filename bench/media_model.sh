#!/usr/bin/env bash
# The emulated media against their own model: for each preset, serve a store
# through storlab's FUSE media server and run 4 KiB random reads at QD 1, 8
# and 32 (O_DIRECT); print measured IOPS and mean latency beside the model's
# prediction (`storlab media --predict`) and the ratio.
#
# First the media layer's own ceiling: the same runs on `fixed:0` (every
# request through the FUSE server, as on a device preset, but replied to at
# once). A preset row whose model IOPS is above the ceiling's IOPS at that
# queue depth cannot be reached on this machine and reads "above ceiling";
# every other row reads "within 10%" (IOPS and latency both within 10% of
# the model) or "OFF" (not). The store sits in /dev/shm, as the lab's does.
#
# usage: sudo bench/media_model.sh [PRESET...]   (default: every preset)
# env:   STORLAB (binary, default target/release/storlab), RUNTIME (s, 8),
#        RAMP (s, 2), SIZE (store, 1g), QDS ("1 8 32"),
#        SERVE_ARGS (more media-serve options, e.g. --no-calibrate),
#        CEILING (the medium measured first as the ceiling, fixed:0)
set -euo pipefail

STORLAB=${STORLAB:-target/release/storlab}
RUNTIME=${RUNTIME:-8}
RAMP=${RAMP:-2}
SIZE=${SIZE:-1g}
QDS=${QDS:-"1 8 32"}
read -r -a SERVE_ARGS <<<"${SERVE_ARGS:-}"
CEILING=${CEILING:-fixed:0}
PRESETS=("$@")
if [ ${#PRESETS[@]} -eq 0 ]; then
    mapfile -t PRESETS < <("$STORLAB" media | awk '{print $1}')
fi

WORK=$(mktemp -d /dev/shm/storlab-media-bench.XXXXXX)
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

printf '%-16s %4s %10s %10s %6s %10s %10s %6s  %s\n' preset qd "IOPS" "model IOPS" ratio \
    "lat us" "model us" ratio verdict
declare -A CEIL=()
for p in "$CEILING" "${PRESETS[@]}"; do
    "$STORLAB" media-serve --backing "$BACKING" --mount "$MNT" --media "$p" \
        --ready-file "$WORK/ready" "${SERVE_ARGS[@]}" >"$WORK/serve-$p.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 100); do
        [ -s "$WORK/ready" ] && break
        kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve-$p.log"; exit 1; }
        sleep 0.1
    done
    [ -s "$WORK/ready" ] || { echo "media-serve $p did not start" >&2; exit 1; }
    for qd in $QDS; do
        read -r iops lat < <(measure "$p" "$qd")
        if [ -z "${CEIL[$qd]:-}" ]; then
            # The first medium measured is the ceiling.
            CEIL[$qd]=$iops
            printf '%-16s %4d %10.0f %10s %6s %10.1f %10s %6s  %s\n' "$p" "$qd" "$iops" - - \
                "$lat" - - "the media layer's ceiling"
            continue
        fi
        if pred=$("$STORLAB" media --predict "$p" --bs 4k --iodepth "$qd" --size "$SIZE" \
            --json 2>/dev/null); then
            read -r miops mlat < <(jq -r '.[0] | "\(.iops) \(.mean_latency_us)"' <<<"$pred")
        else
            miops=- mlat=-
        fi
        awk -v p="$p" -v q="$qd" -v i="$iops" -v l="$lat" -v mi="$miops" -v ml="$mlat" \
            -v c="${CEIL[$qd]}" 'BEGIN {
            if (mi == "-") { printf "%-16s %4d %10.0f %10s %6s %10.1f %10s %6s  %s\n", p, q, i, "-", "-", l, "-", "-", "no model"; exit }
            ri = i / mi; rl = l / ml
            if (mi > c) v = sprintf("above ceiling (%.0f IOPS)", c)
            else if (ri >= 0.9 && ri <= 1.1 && rl >= 0.9 && rl <= 1.1) v = "within 10%"
            else v = "OFF"
            printf "%-16s %4d %10.0f %10.0f %6.2f %10.1f %10.1f %6.2f  %s\n", p, q, i, mi, ri, l, ml, rl, v }'
    done
    stop_server
    rm -f "$WORK/ready"
    # The server's own account: the round trip it charged, how late it sent
    # the held replies.
    grep -o "[0-9.]* µs of the server.s round trip.*" "$WORK/serve-$p.log" | sed "s/^/    $p: /" >&2 ||
        grep -o 'late.*' "$WORK/serve-$p.log" | sed "s/^/    $p: /" >&2 || true
done

#!/usr/bin/env bash
# Several connections per target (issue 14): storlab with ?nconnect=N against
# fio with one job per connection (numjobs=N), at N = 1, 2, 4 and 8, on the
# lab's servers (RAM backing, 127.0.0.1). 4 KiB random reads, QD 16 per
# connection: storlab runs one engine thread at iodepth 16*N over N
# connections; fio runs N jobs of iodepth 16, each with its own connection.
# A second storlab shape, --numjobs N --threads N (a connection per engine
# thread, as fio's jobs), shows what the cores, not the connections, give.
# Reports IOPS and client CPU per I/O (user + system time of the whole client
# process tree, from /usr/bin/time, over the I/Os done).
#
# fio engines: nbd (Debian's fio has it). Debian's fio has no nfs or libiscsi
# engine (`fio --enghelp`); set FIO_FULL to a fio built with them (e.g. by
# bench/protocols_vs_fio.py --build-fio) to compare those rows too; without it
# the NFS and iSCSI rows show storlab alone.
#
#   bench/multiconn.sh            # RUNTIME=5 CONNS="1 2 4 8" PROTOS="nbd nfs3 nfs4 iscsi" REPEAT=1
# REPEAT=N runs each point N times, the three shapes alternating, and prints
# each shape's median IOPS (and the CPU per I/O of that median run).
# RAW=1 also prints every run (nconnect, threads, fio: IOPS and CPU per I/O) to stderr.
# Needs root (the lab) and a release build (cargo build --release).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STORLAB=$ROOT/target/release/storlab
RUNTIME=${RUNTIME:-5}
CONNS=${CONNS:-"1 2 4 8"}
PROTOS=${PROTOS:-"nbd nfs3 nfs4 iscsi"}
REPEAT=${REPEAT:-1}
QD=16
FIO_FULL=${FIO_FULL:-}

TMP=$(mktemp -d /tmp/storlab-multiconn-bench.XXXXXX)
STATE=$TMP/lab
cleanup() {
    "$STORLAB" lab down --state-dir "$STATE" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT

read -r P1 P2 P3 P4 < <(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
"$STORLAB" lab up --state-dir "$STATE" --net loopback --media ram --size 1g \
    --nfs-port "$P1" --mountd-port "$P2" --iscsi-port "$P3" --nbd-port "$P4" >/dev/null
LAB=$("$STORLAB" lab status --state-dir "$STATE" --json)
url() { jq -r ".targets.$1" <<<"$LAB"; }

# with_opt URL OPT: the URL with one more query option.
with_opt() { case $1 in *\?*) echo "$1&$2" ;; *) echo "$1?$2" ;; esac; }

# timed OUT CMD...: run CMD, its CPU seconds (user + system) into OUT.
timed() {
    local out=$1
    shift
    /usr/bin/time -f "%U %S" -o "$out.time" "$@" >"$out" 2>"$out.err" || {
        echo "failed: $*" >&2
        tail -5 "$out.err" >&2
        return 1
    }
    awk '{ print $1 + $2 }' "$out.time"
}

# storlab_point PROTO N MODE: "IOPS CPU_US_PER_IO". MODE nconnect: one
# engine thread, one worker at iodepth 16*N over nconnect=N; threads: N
# workers of iodepth 16 on N engine threads, a connection each (fio's shape).
storlab_point() {
    local u json cpu shape
    json=$TMP/s.json
    if [ "$3" = nconnect ]; then
        u=$(with_opt "$(url "$1")" "nconnect=$2")
        shape=(--iodepth $((QD * $2)) --threads 1)
    else
        u=$(url "$1")
        shape=(--iodepth "$QD" --numjobs "$2" --threads "$2" --disk_layout shared)
    fi
    cpu=$(timed "$TMP/s.out" "$STORLAB" run --target "$u" --rw randread --bs 4k "${shape[@]}" \
        --size 512m --runtime "$RUNTIME" --no-db -q --json "$json")
    jq -r --arg cpu "$cpu" '.jobs[0].points[0].summary.total
        | "\(.iops|floor) \(($cpu|tonumber) * 1e6 / .ios * 100 | floor / 100)"' "$json"
}

# fio_args PROTO FIO: the engine options, or nothing when FIO lacks the engine.
fio_args() {
    local host nfsport mport
    case $1 in
    nbd) echo "--ioengine=nbd --uri=$(url nbd)" ;;
    iscsi)
        "$2" --enghelp 2>/dev/null | grep -qx '[[:space:]]*libiscsi' || return 0
        echo "--ioengine=libiscsi --filename=$(url iscsi | sed 's/:/\\:/g')"
        ;;
    nfs3 | nfs4)
        "$2" --enghelp 2>/dev/null | grep -qx '[[:space:]]*nfs' || return 0
        host=127.0.0.1
        nfsport=$P1
        mport=""
        [ "$1" = nfs3 ] && mport="&mountport=$P2"
        echo "--ioengine=nfs --nfs_url=nfs://$host/storlab?version=${1#nfs}&nfsport=$nfsport$mport \
--filename=disk.img --allow_file_create=0"
        ;;
    esac
}

# fio_point PROTO N: "IOPS CPU_US_PER_IO", or "- -" without an engine.
fio_point() {
    local fio=fio args cpu
    [ "$1" != nbd ] && [ -n "$FIO_FULL" ] && fio=$FIO_FULL
    args=$(fio_args "$1" "$fio")
    if [ -z "$args" ]; then
        echo "- -"
        return
    fi
    # shellcheck disable=SC2086
    cpu=$(timed "$TMP/f.json" "$fio" --name=mc --rw=randread --bs=4k --iodepth=$QD \
        --numjobs="$2" --group_reporting --time_based --runtime="$RUNTIME" --size=512m \
        --output-format=json $args)
    jq -r --arg cpu "$cpu" '.jobs[0].read
        | "\(.iops|floor) \(($cpu|tonumber) * 1e6 / .total_ios * 100 | floor / 100)"' \
        <(sed -n '/^{/,$p' "$TMP/f.json")
}

# median LINES: of "IOPS CPU" lines, the one with the median IOPS (the lower
# middle one for an even count); "- -" stays "- -".
median() {
    sort -n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

echo "4 KiB random read, QD $QD per connection, ${RUNTIME} s per point, median of $REPEAT" \
    "alternating run(s), lab on 127.0.0.1 (RAM)"
echo "$("$STORLAB" --version 2>/dev/null || echo storlab); $(fio --version)"
printf "%-6s %5s %13s %13s %10s %12s %12s %10s %8s\n" protocol conns "nconnect IOPS" \
    "threads IOPS" "fio IOPS" "nconnect µs" "threads µs" "fio µs" "best x"
for p in $PROTOS; do
    for n in $CONNS; do
        : >"$TMP/runs.s" && : >"$TMP/runs.t" && : >"$TMP/runs.f"
        for _ in $(seq "$REPEAT"); do
            storlab_point "$p" "$n" nconnect >>"$TMP/runs.s"
            storlab_point "$p" "$n" threads >>"$TMP/runs.t"
            fio_point "$p" "$n" >>"$TMP/runs.f"
        done
        [ -n "${RAW:-}" ] && paste "$TMP/runs.s" "$TMP/runs.t" "$TMP/runs.f" >&2
        read -r si sc < <(median <"$TMP/runs.s")
        read -r ti tc < <(median <"$TMP/runs.t")
        read -r fi fc < <(median <"$TMP/runs.f")
        ratio=$(awk -v a="$si" -v t="$ti" -v b="$fi" \
            'BEGIN { if (t > a) a = t; if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')
        printf "%-6s %5s %13s %13s %10s %12s %12s %10s %8s\n" "$p" "$n" "$si" "$ti" "$fi" "$sc" \
            "$tc" "$fc" "$ratio"
    done
done

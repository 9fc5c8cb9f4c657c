#!/usr/bin/env bash
# 10,000 simulated agents through the controller's run_hosts (issue 26; BENCHMARKS.md,
# "10,000 agents"): the time from an interval's first agent reply to the merged fleet
# interval, with and without the JSON decode, and the controller's memory per agent.
#   bench/fleet_10k.sh                      # 10,000 agents, 4 workers each, 3 intervals
#   STORLAB_SCALE_AGENTS=20000 STORLAB_SCALE_WORKERS=16 bench/fleet_10k.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
cargo test --release --test fleet_scale -- --ignored --nocapture ten_thousand_agents_through_run_hosts

#!/usr/bin/env bash
# tests/hw/pebs-tiering.sh: tierd with PMU sampling (PEBS on Intel, IBS on AMD) on a real machine
# with two or more NUMA nodes (remote DRAM or CXL as the slow tier). Runs tierd-gups with its table
# on the slow node, then:
#   1. records 10 s of PEBS/IBS samples (tierctl record) and scores them against gups's declared
#      hot set (tierctl hotness --trace): precision and recall of the hot 2 MiB regions;
#   2. runs tierd (sampling.source = "perf") and reports the seconds until 90% of the hot set is
#      on the fast node (tierd-hotset, ground truth from move_pages), or "not reached".
# Exit 0 with the figures; 1 when a step fails or precision/recall < 0.8 or 90% is never reached;
# 77 (ctest: Skipped, label hw) with the reason when there is no PMU, fewer than two nodes with
# memory, or no root. Usage: tests/hw/pebs-tiering.sh [BUILD_DIR] (default <repo>/build).
#   TIERD_HW_SLOW_NODE  the slow node (default: the highest node with memory)
#   TIERD_HW_FAST_NODE  the fast node (default: the lowest node with CPUs)
#   TIERD_HW_TABLE      gups table size (default 4G), TIERD_HW_SECONDS run length (default 120)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$repo/build}"
bin="$build/bin"

skip() {
  echo "SKIP: $*"
  exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (move_pages of another process, system perf events)"
pmu=""
[ -e /sys/bus/event_source/devices/cpu/type ] && grep -q GenuineIntel /proc/cpuinfo && pmu=pebs
[ -e /sys/bus/event_source/devices/cpu_core/type ] && pmu=pebs
[ -e /sys/bus/event_source/devices/ibs_op/type ] && pmu=ibs
[ -n "$pmu" ] || skip "no PEBS/IBS PMU (/sys/bus/event_source/devices has no cpu, cpu_core or ibs_op)"
mem_nodes=()
for n in /sys/devices/system/node/node[0-9]*; do
  id="${n##*node}"
  total_kb="$(awk '/MemTotal/ {print $4}' "$n/meminfo")"
  [ "${total_kb:-0}" -gt 0 ] && mem_nodes+=("$id")
done
[ "${#mem_nodes[@]}" -ge 2 ] || skip "fewer than two NUMA nodes with memory (${#mem_nodes[@]})"
for b in tierd tierctl tierd-gups tierd-hotset; do
  [ -x "$bin/$b" ] || { echo "FAIL: $bin/$b missing (build first: cmake --build --preset dev)"; exit 1; }
done

slow="${TIERD_HW_SLOW_NODE:-${mem_nodes[${#mem_nodes[@]} - 1]}}"
fast="${TIERD_HW_FAST_NODE:-}"
if [ -z "$fast" ]; then
  for id in "${mem_nodes[@]}"; do
    if [ -n "$(cat /sys/devices/system/node/node"$id"/cpulist)" ]; then fast="$id"; break; fi
  done
fi
if [ -z "$fast" ] || [ "$fast" = "$slow" ]; then skip "no CPU node distinct from slow node $slow"; fi
table="${TIERD_HW_TABLE:-4G}"
seconds="${TIERD_HW_SECONDS:-120}"
work="$(mktemp -d /tmp/tierd-hw.XXXXXX)"
trap 'kill $gpid $tpid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
gpid=""
tpid=""
echo "== $pmu, fast node $fast, slow node $slow, table $table, ${seconds}s"

echo always >/sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
"$bin/tierd-gups" --size "$table" --backing thp --node "$slow" --hot-fraction 0.1 --hot-share 0.9 \
  --seconds "$seconds" --hot-set-out "$work/hot-set" >"$work/gups.log" 2>&1 &
gpid=$!
for _ in $(seq 600); do
  grep -q "updates/s" "$work/gups.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "updates/s" "$work/gups.log" || { echo "FAIL: gups did not start"; cat "$work/gups.log"; exit 1; }

# 1. Hotness: PMU samples against the declared hot set.
"$bin/tierctl" record --pid "$gpid" --seconds 10 --source "perf-$pmu" --out "$work/trace"
"$bin/tierctl" hotness --trace "$work/trace" --truth "$work/hot-set" --json >"$work/hotness.json"
precision="$(jq -r '.precision // empty' "$work/hotness.json")"
recall="$(jq -r '.recall // empty' "$work/hotness.json")"
echo "RESULT precision=${precision:-none} recall=${recall:-none}"

# 2. Tiering: time until 90% of the hot set is on the fast node.
cat >"$work/tierd.toml" <<EOF
[daemon]
metrics_listen = ""
[tiers]
fast_nodes = [$fast]
slow_nodes = [$slow]
[sampling]
source = "perf"
[[workload]]
name = "gups"
command = "$(readlink -f "$bin/tierd-gups")"
profile = "gups"
EOF
cp -r "$repo/config/profiles" "$work/profiles"
"$bin/tierd" --config "$work/tierd.toml" >"$work/tierd.log" 2>&1 &
tpid=$!
reached=""
start=$(date +%s)
while [ $(($(date +%s) - start)) -lt $((seconds - 15)) ]; do
  pct="$("$bin/tierd-hotset" --hot-set "$work/hot-set" --fast "$fast" |
    sed -n 's/.*hot_on_fast_pct=\([0-9.]*\).*/\1/p')"
  if [ -z "$reached" ] && awk -v p="${pct:-0}" 'BEGIN { exit !(p >= 90) }'; then
    reached=$(($(date +%s) - start))
  fi
  sleep 1
done
kill -TERM "$tpid"
wait "$tpid" || true
tpid=""
echo "RESULT time_to_90pct_s=${reached:-not reached}"
tail -3 "$work/tierd.log"

rc=0
awk -v p="${precision:-0}" 'BEGIN { exit !(p >= 0.8) }' || { echo "FAIL: precision < 0.8"; rc=1; }
awk -v r="${recall:-0}" 'BEGIN { exit !(r >= 0.8) }' || { echo "FAIL: recall < 0.8"; rc=1; }
[ -n "$reached" ] || { echo "FAIL: 90% of the hot set never reached the fast node"; rc=1; }
exit $rc

#!/bin/sh
# The emulated-PMU tiering scenarios (tiering-pebs, tiering-ibs), sourced inside the guest after
# guest-lib.sh. One function runs the whole scenario on whichever PMU the rig emulated.

# pmu_tiering KIND [PERIOD]: KIND pebs or ibs (the source is perf-KIND), PERIOD the first sample
# period of the `tierctl hotness` window (default tierd's 10007). Loads the module, starts a 1 GiB
# THP gups on node 1 (10% hot gets 90%), scores `tierctl hotness --source perf-KIND` over 20 s
# ("RESULT hotness-KIND precision=P recall=R", both >= 0.9), then runs tierd with
# tests/vm/config/tierd-gups-pmu.toml (source auto) until the hot set has been >= 90% on node 0
# for 20 s or 120 s passed ("RESULT tiering-KIND reached_s=S moved_x=M"). Both sample at tierd's
# default period with the CPU budget that config explains (30%: the hardware default's 1% under
# TCG's slowdown). Ends the scenario (rig_done).
pmu_tiering() {
  kind="$1"
  period="${2:-10007}"
  source="perf-$kind"
  tierd="$(need_bin tierd)" || exit 2
  tierctl="$(need_bin tierctl)" || exit 2
  gups="$(need_bin tierd-gups)" || exit 2
  hotset="$(need_bin tierd-hotset)" || exit 2
  ip link set lo up 2>/dev/null || true
  echo always >/sys/kernel/mm/transparent_hugepage/enabled
  echo 2 >/proc/sys/kernel/perf_event_paranoid
  if ! check "insmod tierd_pmu_emu.ko" insmod "$RIG_OUT/supplied/tierd_pmu_emu.ko"; then
    dmesg | tail -n 20
    rig_done
  fi

  "$gups" --size 1G --backing thp --node 1 --hot-fraction 0.1 --hot-share 0.9 --seconds 300 \
    --hot-set-out /tmp/hot-set >"$RIG_OUT/gups.log" 2>&1 &
  gpid=$!
  if ! rig_wait_line "$RIG_OUT/gups.log" "updates/s" 120; then
    fail "gups did not start"
    cat "$RIG_OUT/gups.log"
    rig_done
  fi
  check "the hot set starts on the slow node" sh -c "'$hotset' --hot-set /tmp/hot-set | grep -q 'hot_on_fast_pct=0.0'"

  # First the sampler alone: tierctl hotness with $source for 20 s scores the hot 2 MiB regions
  # it finds against gups's hot set; gups's updates/s before and during show what sampling costs it.
  json="$RIG_OUT/hotness.json"
  sleep 5
  gups_t() { sed -n 's/^t=\([0-9]*\)s updates.*/\1/p' "$RIG_OUT/gups.log" | tail -n 1; }
  t0="$(gups_t)"
  check "tierctl hotness --source $source exits 0" sh -c "'$tierctl' hotness --source $source \
    --pid $gpid --seconds 20 --truth /tmp/hot-set --cpu-budget-percent 30 --sample-period $period --json --heat-out '$RIG_OUT/heat.txt' >'$json'"
  jq -M -c '{source, precision, recall, truth_regions, predicted_regions, true_positives, samples}' "$json"
  precision="$(jq -r '.precision' "$json" 2>/dev/null)"
  recall="$(jq -r '.recall' "$json" 2>/dev/null)"
  echo "RESULT hotness-$kind precision=$precision recall=$recall"
  jcheck "$kind hot regions: precision ${precision:-(none)} >= 0.9" "$json" \
    '(.precision | type) == "number" and .precision >= 0.9'
  jcheck "$kind hot regions: recall ${recall:-(none)} >= 0.9" "$json" \
    '(.recall | type) == "number" and .recall >= 0.9'
  rate() { # rate FIRST LAST: median of gups's updates/s lines t=FIRST..LAST s
    sed -n 's/^t=\([0-9]*\)s updates\/s=\([0-9.]*\).*/\1 \2/p' "$RIG_OUT/gups.log" |
      awk -v a="$1" -v b="$2" '$1 >= a && $1 <= b { print $2 }' | sort -n |
      awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "?" }'
  }
  t1="$(gups_t)"
  echo "gups updates/s, median: unarmed $(rate $((t0 - 4)) "$t0") (t=$((t0 - 4))..${t0}s), sampled $(rate $((t0 + 2)) "$t1") (t=$((t0 + 2))..${t1}s)"

  "$tierd" --config "$RIG_SRC/tests/vm/config/tierd-gups-pmu.toml" >"$RIG_OUT/tierd.log" 2>&1 &
  tpid=$!
  reached=""
  below_after=0
  start=$(date +%s)
  t=0
  end=120
  while [ $t -lt $end ]; do
    sleep 1
    t=$(($(date +%s) - start))
    line="$("$hotset" --hot-set /tmp/hot-set 2>&1)"
    pct="$(echo "$line" | sed -n 's/.*hot_on_fast_pct=\([0-9.]*\).*/\1/p')"
    echo "t=${t}s hot set on fast: ${pct:-?}% | $(grep 'tierd: tick ' "$RIG_OUT/tierd.log" | tail -n 1 | sed 's/^tierd: //')"
    whole="${pct%%.*}"
    if [ -n "$reached" ]; then
      [ "${whole:-0}" -lt 90 ] && below_after=$((below_after + 1))
    elif [ "${whole:-0}" -ge 90 ]; then
      reached=$t
      end=$((t + 20))
      echo "hot set reached 90% on the fast tier after ${t}s"
    fi
  done
  kill -TERM $tpid
  wait $tpid
  trc=$?
  kill -TERM $gpid 2>/dev/null
  wait $gpid
  grep -E 'source|sampl' "$RIG_OUT/tierd.log" | head -n 5
  tail -n 3 "$RIG_OUT/tierd.log"
  tail -n 2 "$RIG_OUT/gups.log"

  hot_bytes="$(echo "$line" | sed -n 's/.*hot_bytes=\([0-9]*\).*/\1/p')"
  moved="$(grep -o 'moved_bytes=[0-9]*' "$RIG_OUT/tierd.log" | tail -n 1 | cut -d= -f2)"
  moved_x="$(awk -v m="${moved:-0}" -v h="${hot_bytes:-1}" 'BEGIN { printf "%.2f", m / h }')"
  echo "RESULT tiering-$kind reached_s=${reached:-none} moved_x=$moved_x"
  check "tierd chose $source by itself" grep -q "hotness source: $source" "$RIG_OUT/tierd.log"
  if [ -e /sys/bus/event_source/devices/cpu/events/mem-loads-aux ]; then
    check "tierd led load latency with mem-loads-aux" grep -q 'leader=mem-loads-aux' "$RIG_OUT/tierd.log"
  fi
  check "the hot set reached >= 90% on the fast tier" [ -n "$reached" ]
  check "and stayed there (samples below 90% afterwards: $below_after)" [ "$below_after" -eq 0 ]
  check "migrated <= 2x the hot set (${moved_x}x)" [ "${moved:-999999999999}" -le $((${hot_bytes:-0} * 2)) ]
  check "gups's table checksum is intact" grep -q 'checksum ok' "$RIG_OUT/gups.log"
  check "tierd stopped cleanly on SIGTERM (exit $trc)" [ $trc -eq 0 ]
  check "rmmod tierd_pmu_emu" rmmod tierd_pmu_emu
  grep -E '^pmu_' "$RIG_OUT/memsim.stats"
  rig_done
}

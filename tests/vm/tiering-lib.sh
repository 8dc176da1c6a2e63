#!/bin/sh
# Pieces the tiering scenarios share, sourced inside the guest after guest-lib.sh:
#   . "$RIG_SRC/tests/vm/guest-lib.sh"
#   . "$RIG_SRC/tests/vm/tiering-lib.sh"
#
# One "arm" = one fresh tierd-gups run under one tiering setup: tl_start_gups, tl_arm_begin (the
# clock, /proc/vmstat and kthread CPU baselines), tl_follow (a line per second with the share of
# the hot set on the fast node, ground truth from tierd-hotset), tl_arm_end, tl_stop_gups, then
# tl_row adds the arm to the table that tl_table prints and writes to $RIG_OUT/summary.txt.
# CPU is read from /proc/PID/stat (utime + stime, in USER_HZ = 100 ticks per second on x86).

tl_gups_bin="$(need_bin tierd-gups)" || exit 2
tl_hotset_bin="$(need_bin tierd-hotset)" || exit 2
tl_rows="$RIG_OUT/rows.tsv"
: >"$tl_rows"

# tl_uptime: guest uptime in seconds (where the time goes under TCG).
tl_uptime() {
  cut -d' ' -f1 /proc/uptime
}

# tl_start_gups NAME SECONDS GUPS-ARGS...: starts tierd-gups in the background for at most
# SECONDS of updates (the arm stops it earlier with SIGTERM), its log in $RIG_OUT/gups-NAME.log
# and its hot set in /tmp/hot-set-NAME; returns once the table is populated (the first updates/s
# line). Sets tl_gpid, tl_glog, tl_hs. Returns 1 (after a failed check) if gups did not start.
tl_start_gups() {
  tl_name="$1"
  tl_glog="$RIG_OUT/gups-$1.log"
  tl_hs="/tmp/hot-set-$1"
  tl_secs="$2"
  shift 2
  tl_t0="$(tl_uptime)"
  "$tl_gups_bin" --seconds "$tl_secs" --hot-set-out "$tl_hs" "$@" >"$tl_glog" 2>&1 &
  tl_gpid=$!
  tl_i=0
  while ! grep -q "updates/s" "$tl_glog" 2>/dev/null; do
    tl_i=$((tl_i + 1))
    if ! kill -0 "$tl_gpid" 2>/dev/null || [ $tl_i -gt 3000 ]; then
      cat "$tl_glog"
      fail "[$tl_name] tierd-gups did not start"
      kill -TERM "$tl_gpid" 2>/dev/null
      wait "$tl_gpid"
      return 1
    fi
    sleep 0.1
  done
  echo "[$tl_name] $(head -n 1 "$tl_glog") (populated in $(awk -v a="$tl_t0" -v b="$(tl_uptime)" \
    'BEGIN { printf "%.1f", b - a }') s)"
}

# tl_hot: where the hot set of the current gups lives now. Sets tl_pct (share on node 0, percent,
# one decimal), tl_hot_bytes and tl_hline (tierd-hotset's whole line).
tl_hot() {
  tl_hline="$("$tl_hotset_bin" --hot-set "$tl_hs" 2>&1)"
  tl_pct="$(echo "$tl_hline" | sed -n 's/.*hot_on_fast_pct=\([0-9.]*\).*/\1/p')"
  # shellcheck disable=SC2034  # an output, read by the scenarios
  tl_hot_bytes="$(echo "$tl_hline" | sed -n 's/.*hot_bytes=\([0-9]*\).*/\1/p')"
}

# tl_sys_ticks PID: system time (stime) of PID, all its threads, in ticks (empty if it is gone).
tl_sys_ticks() {
  # Drop "pid (comm) " first: stime (field 15) is then field 13.
  awk '{ sub(/^.*\) /, ""); print $13 }' "/proc/$1/stat" 2>/dev/null
}

# tl_kt_sample FILE: appends "pid comm ticks" of the kernel threads that tier memory or make room
# for it (kswapd, kcompactd, kdamond, kmigrated) to FILE. Sampled every second, since a kdamond
# ends with its owner and its last CPU figure must be kept.
tl_kt_sample() {
  cat /proc/[0-9]*/stat 2>/dev/null |
    awk '$2 ~ /^\((kswapd|kcompactd|kdamond|kmigrated)/ { print $1, $2, $14 + $15 }' >>"$1"
}

# tl_arm_begin: baselines for the current arm (after gups is populated, before tiering starts):
# the clock, /proc/vmstat, gups's system time and the kthreads' CPU ticks.
tl_arm_begin() {
  tl_vm0="$RIG_OUT/vmstat-$tl_name-begin"
  tl_vm1="$RIG_OUT/vmstat-$tl_name-end"
  tl_kt0="$RIG_OUT/kthreads-$tl_name-begin"
  tl_kt1="$RIG_OUT/kthreads-$tl_name-samples"
  cat /proc/vmstat >"$tl_vm0"
  : >"$tl_kt0"
  : >"$tl_kt1"
  tl_kt_sample "$tl_kt0"
  tl_g0="$(tl_sys_ticks "$tl_gpid")"
  tl_start=$(date +%s)
  : >"$RIG_OUT/hot-$tl_name.tsv"
}

# tl_follow SECONDS [PROGRESS-FUNCTION [HOLD-SECONDS]]: one line per second for SECONDS: the hot
# set's share on node 0 and what PROGRESS-FUNCTION prints (e.g. tierd's tick line); "SECOND
# PERCENT" lines go to $RIG_OUT/hot-NAME.tsv as well (scripts/bench-report plots them). With
# HOLD-SECONDS it ends that long after the hot set reached 90% (a CI check that only needs it to
# get there and stay a while), SECONDS at the latest. Sets tl_reached (seconds since
# tl_arm_begin until >= 90% of the hot set was on node 0; empty if never), tl_below_after
# (samples below 90% after that) and leaves tl_pct at the last sample.
tl_follow() {
  tl_reached=""
  tl_below_after=0
  tl_t=0
  tl_end="$1"
  while [ $tl_t -lt "$tl_end" ]; do
    sleep 1
    tl_t=$(($(date +%s) - tl_start))
    tl_hot
    tl_kt_sample "$tl_kt1"
    tl_prog=""
    [ -n "$2" ] && tl_prog="$($2)"
    echo "[$tl_name] t=${tl_t}s hot set on fast: ${tl_pct:-?}% | $tl_prog"
    echo "$tl_t ${tl_pct:-}" >>"$RIG_OUT/hot-$tl_name.tsv"
    tl_whole="${tl_pct%%.*}"
    if [ -n "$tl_reached" ]; then
      [ "${tl_whole:-0}" -lt 90 ] && tl_below_after=$((tl_below_after + 1))
    elif [ "${tl_whole:-0}" -ge 90 ]; then
      tl_reached=$tl_t
      echo "[$tl_name] hot set reached 90% on the fast node after ${tl_t}s"
      if [ -n "${3:-}" ] && [ $((tl_t + $3)) -lt "$tl_end" ]; then tl_end=$((tl_t + $3)); fi
    fi
  done
}

# tl_vm_progress: promotions, demotions and NUMA hint faults since tl_arm_begin (kernel arms'
# per-second progress).
tl_vm_progress() {
  awk 'FNR == NR { b[$1] = $2; next }
       $1 == "pgpromote_success" { p = $2 - b[$1] }
       $1 ~ /^pgdemote_/ { d += $2 - b[$1] }
       $1 == "numa_hint_faults" { h = $2 - b[$1] }
       $1 == "pgmigrate_success" { m = $2 - b[$1] }
       END { printf "kernel: promoted %d MiB, demoted %d MiB, migrated %d MiB, %d hint faults",
             p * 4 / 1024, d * 4 / 1024, m * 4 / 1024, h }' "$tl_vm0" /proc/vmstat
}

# tl_vm_delta REGEX: sum of the /proc/vmstat counters matching REGEX between the arm's begin and
# end (tl_arm_end).
tl_vm_delta() {
  awk -v re="$1" 'FNR == NR { b[$1] = $2; next } $1 ~ re { s += $2 - b[$1] } END { print s + 0 }' \
    "$tl_vm0" "$tl_vm1"
}

# tl_arm_end: the arm's end figures, before gups stops. Sets tl_gups_cpu (gups's system time
# during the arm, seconds: under the kernel's tiering it includes the NUMA scanning, hint faults
# and migrations done in gups's context; its user time is the workload itself), tl_kt_cpu (kthreads' CPU seconds during the arm), tl_kt_detail, and the
# kernel's counters tl_k_promoted, tl_k_demoted, tl_k_migrated (bytes: pgpromote_success,
# pgdemote_*, pgmigrate_success; base pages of 4 KiB) and tl_k_hint (numa_hint_faults).
tl_arm_end() {
  tl_g1="$(tl_sys_ticks "$tl_gpid")"
  tl_kt_sample "$tl_kt1"
  cat /proc/vmstat >"$tl_vm1"
  tl_gups_cpu="$(awk -v a="${tl_g0:-0}" -v b="${tl_g1:-0}" 'BEGIN { printf "%.2f", (b - a) / 100 }')"
  tl_kt_cpu="$(awk 'FNR == NR { b[$1] = $3; next } { l[$1] = $3; n[$1] = $2 }
      END { for (p in l) s += l[p] - b[p]; printf "%.2f", s / 100 }' "$tl_kt0" "$tl_kt1")"
  tl_kt_detail="$(awk 'FNR == NR { b[$1] = $3; next } { l[$1] = $3; n[$1] = $2 }
      END { for (p in l) if (l[p] > b[p]) { gsub(/[()]/, "", n[p]); printf "%s%s %.2fs", sep, n[p], (l[p] - b[p]) / 100; sep = ", " } }' \
    "$tl_kt0" "$tl_kt1")"
  tl_k_promoted=$(($(tl_vm_delta '^pgpromote_success$') * 4096))
  tl_k_demoted=$(($(tl_vm_delta '^pgdemote_') * 4096))
  tl_k_migrated=$(($(tl_vm_delta '^pgmigrate_success$') * 4096))
  tl_k_hint=$(tl_vm_delta '^numa_hint_faults$')
  echo "[$tl_name] kernel counters: pgpromote_success $((tl_k_promoted / 1048576)) MiB," \
    "pgdemote_* $((tl_k_demoted / 1048576)) MiB, pgmigrate_success $((tl_k_migrated / 1048576)) MiB," \
    "numa_hint_faults $tl_k_hint; kthreads: ${tl_kt_detail:-none busy}; gups sys $tl_gups_cpu s"
}

# tl_stop_gups: SIGTERM to gups, waits; checks that its table checksum is intact. Sets tl_ups
# (gups's mean updates/s over its run) and tl_data ("checksum ok" or what it said).
tl_stop_gups() {
  kill -TERM "$tl_gpid" 2>/dev/null
  wait "$tl_gpid"
  tl_grc=$?
  tail -n 2 "$tl_glog"
  tl_ups="$(sed -n 's/.*mean updates\/s \([0-9]*\).*/\1/p' "$tl_glog")"
  tl_data="$(grep -o 'checksum [A-Za-z]*' "$tl_glog" | tail -n 1)"
  check "[$tl_name] gups's table checksum is intact (exit $tl_grc)" grep -q 'checksum ok' "$tl_glog"
}

# tl_start_tierd CONFIG [ARG...]: starts tierd with CONFIG (and tierd's options ARG..., e.g.
# --dry-run), log in $RIG_OUT/tierd-NAME.log; sets tl_tpid.
tl_start_tierd() {
  tl_tlog="$RIG_OUT/tierd-$tl_name.log"
  tl_cfg="$1"
  shift
  "$RIG_BIN/tierd" --config "$tl_cfg" "$@" >"$tl_tlog" 2>&1 &
  tl_tpid=$!
}

# tl_config_set FILE TABLE KEY VALUE: prints the TOML config FILE with `KEY = VALUE` (VALUE as
# written: quote a string) right under its [TABLE] header, the file's own KEY lines dropped; without
# a [TABLE] it comes first, as its own table (a bench arm's variant of a shipped config).
tl_config_set() {
  if grep -q "^\[$2\]\$" "$1"; then
    awk -v t="[$2]" -v k="$3" -v v="$4" '
      index($0, k " = ") == 1 { next }
      { print }
      $0 == t { print k " = " v }' "$1"
  else
    echo "[$2]"
    echo "$3 = $4"
    cat "$1"
  fi
}

# Bench arms that run tierd are files: tests/vm/arms/NAME.toml (tests/vm/arms/README.md).
tl_arms_dir="$RIG_SRC/tests/vm/arms"

# tl_arm_is_tierd NAME: whether NAME is an arm file (an arm that runs tierd).
tl_arm_is_tierd() {
  case "$1" in */* | .* | '') return 1 ;; esac
  [ -f "$tl_arms_dir/$1.toml" ]
}

# tl_arm_setting NAME KEY: the value of the arm file's "# arm: KEY=VALUE" line (empty if none).
tl_arm_setting() {
  sed -n "s/^# arm: $2=//p" "$tl_arms_dir/$1.toml" | head -n 1
}

# tl_arm_check NAME: whether NAME is an arm the bench scenarios know: the scenarios' own (ideal,
# none, kernel-nb2, kernel-nb2-tuned, kernel-damon) or an arm file; sets placement (ideal for the
# ideal arm, the arm file's placement=, slow or ideal, otherwise slow). An unknown arm, or a
# placement that is neither, is a failed check (the unknown arm returns 1).
tl_arm_check() {
  placement=slow
  case "$1" in
    ideal) placement=ideal ;;
    none | kernel-nb2 | kernel-nb2-tuned | kernel-damon) ;;
    *)
      if ! tl_arm_is_tierd "$1"; then
        fail "unknown arm '$1' (ideal, none, kernel-nb2, kernel-nb2-tuned, kernel-damon, or a file in tests/vm/arms)"
        return 1
      fi
      placement="$(tl_arm_setting "$1" placement)"
      case "${placement:=slow}" in
        slow | ideal) ;;
        *)
          fail "[$1] $tl_arms_dir/$1.toml: placement=$placement (use slow or ideal)"
          placement=slow
          ;;
      esac
      ;;
  esac
}

# tl_arm_config NAME BASE OUT: writes OUT, the tierd config BASE with arm NAME's lines laid over it
# (each `key = value` under a `[table]` replaces that key of that table: tl_config_set) and checks
# that each landed; prints the lines it laid.
tl_arm_config() {
  cp "$2" "$3"
  tl_table=""
  while IFS= read -r tl_line; do
    case "$tl_line" in
      '' | '#'*) continue ;;
      '[['*) fail "[$1] $tl_arms_dir/$1.toml: array tables cannot be laid over ($tl_line)" ;;
      '['*) tl_table="${tl_line#[}" && tl_table="${tl_table%]}" ;;
      *' = '*)
        [ -n "$tl_table" ] || { fail "[$1] $tl_arms_dir/$1.toml: '$tl_line' before any [table]"; continue; }
        tl_config_set "$3" "$tl_table" "${tl_line%% = *}" "${tl_line#* = }" >"$3.new"
        mv "$3.new" "$3"
        echo "[$1] config: [$tl_table] $tl_line"
        check "[$1] the arm's config sets $tl_line" grep -qxF "$tl_line" "$3"
        ;;
      *) fail "[$1] $tl_arms_dir/$1.toml: not a [table] or a 'key = value' line: $tl_line" ;;
    esac
  done <"$tl_arms_dir/$1.toml"
}

# tl_start_tierd_arm NAME BASE: tierd for arm NAME: its config (tl_arm_config of BASE, written next
# to BASE as NAME.toml, where tierd finds BASE's profiles/) and its tierd_args.
tl_start_tierd_arm() {
  tl_arm_cfg="$(dirname "$2")/arm-$1.toml"
  tl_arm_config "$1" "$2" "$tl_arm_cfg"
  # shellcheck disable=SC2046  # tierd_args is split on purpose: several options
  tl_start_tierd "$tl_arm_cfg" $(tl_arm_setting "$1" tierd_args)
}

# tl_stop_tierd_arm NAME: tl_stop_tierd, and for an arm in --dry-run the check that tierd moved
# nothing; sets daemon_cpu (tierd's CPU seconds).
tl_stop_tierd_arm() {
  tl_stop_tierd
  # shellcheck disable=SC2034  # read by the bench scenarios that source this file
  daemon_cpu="${tl_t_cpu:-0}"
  case " $(tl_arm_setting "$1" tierd_args) " in
    *" --dry-run "*)
      check "[$1] tierd in dry run moved nothing (moved_bytes=$tl_t_moved)" [ "${tl_t_moved:-x}" = 0 ] ;;
  esac
}

# tl_tierd_progress: tierd's last tick line.
tl_tierd_progress() {
  grep 'tierd: tick ' "$tl_tlog" | tail -n 1 | sed 's/^tierd: //'
}

# tl_stop_tierd: SIGTERM to tierd, waits, checks it exited 0; sets tl_t_moved (moved_bytes= of
# its stop line) and tl_t_cpu (its CPU seconds from the stop line).
tl_stop_tierd() {
  kill -TERM "$tl_tpid"
  wait "$tl_tpid"
  tl_trc=$?
  check "[$tl_name] tierd stopped cleanly on SIGTERM (exit $tl_trc)" [ $tl_trc -eq 0 ]
  tl_stopline="$(grep 'tierd: stopped after' "$tl_tlog" | tail -n 1)"
  echo "[$tl_name] $tl_stopline"
  # shellcheck disable=SC2034  # outputs, read by the scenarios
  tl_t_moved="$(echo "$tl_stopline" | sed -n 's/.*moved_bytes=\([0-9]*\).*/\1/p')"
  # shellcheck disable=SC2034  # as above
  tl_t_cpu="$(echo "$tl_stopline" | sed -n 's/.*cpu \([0-9.]*\) s.*/\1/p')"
}

# tl_row ARM MIGRATED-BYTES DAEMON-CPU: adds the current arm to the table, with the figures of
# tl_follow, tl_arm_end and tl_stop_gups. DAEMON-CPU is a user-space daemon's own CPU seconds
# ("-" for none).
tl_row() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "${tl_reached:--}" "${tl_pct:-?}" \
    "$2" "$tl_k_migrated" "$3" "$tl_kt_cpu" "$tl_gups_cpu" "${tl_ups:-?}" "${tl_data:-?}" \
    >>"$tl_rows"
}

# tl_table TITLE-LINE...: prints the table of all rows (with the title lines above it) and writes
# it to $RIG_OUT/summary.txt.
tl_table() {
  {
    echo "emulation numbers: compare only within one run"
    for l in "$@"; do echo "$l"; done
    printf '%-16s %-12s %-9s %-12s %-12s %-10s %-10s %-9s %-10s %s\n' "arm" "90% hot at" \
      "hot end" "migrated" "pgmigrate" "daemon" "kthreads" "gups" "updates/s" "data"
    printf '%-16s %-12s %-9s %-12s %-12s %-10s %-10s %-9s %-10s %s\n' "" "(s)" "on DRAM" \
      "MiB" "MiB" "CPU s" "CPU s" "sys s" "mean" ""
    awk -F '\t' '{
      reached = ($2 == "-") ? "not reached" : $2
      printf "%-16s %-12s %-9s %-12.0f %-12.0f %-10s %-10s %-9s %-10s %s\n", $1, reached, $3 "%",
        $4 / 1048576, $5 / 1048576, $6, $7, $8, $9, $10 }' "$tl_rows"
    echo "migrated: the kernel's pgpromote_success + pgdemote_* (kernel arms) or tierd's moved_bytes"
    echo "pgmigrate: the kernel's pgmigrate_success (every migration, tierd's move_pages included)"
    echo "daemon CPU: tierd's own (stop line); kthreads: kswapd, kcompactd, kdamond, kmigrated"
    echo "gups sys: gups's system time (NUMA scanning, hint faults, in-fault migrations are there)"
  } >"$RIG_OUT/summary.txt"
  cat "$RIG_OUT/summary.txt"
}

# --- The kernel's own tiering arms ---

# tl_nb2_start TUNED: numa_balancing=2 with demotion enabled; TUNED=1 adds the tuning that in this
# rig took a GUPS hot set to 90% on node 0 in 36 s where the defaults stalled at 72.5%:
# scan_period_max_ms=1000 (debugfs sched/numa_balancing) and a promote rate limit of
# 100 MB/s (kernel.numa_balancing_promote_rate_limit_MBps). tl_nb2_stop restores every value.
tl_nb2_start() {
  tl_nb_mode="$(cat /proc/sys/kernel/numa_balancing)"
  tl_nb_dem="$(cat /sys/kernel/mm/numa/demotion_enabled)"
  tl_nb_rl="$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps)"
  tl_nb_dbg=/sys/kernel/debug/sched/numa_balancing/scan_period_max_ms
  [ -e "$tl_nb_dbg" ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
  tl_nb_spm="$(cat "$tl_nb_dbg" 2>/dev/null)"
  if [ "$1" = 1 ]; then
    check "[$tl_name] scan_period_max_ms is writable ($tl_nb_dbg)" [ -w "$tl_nb_dbg" ]
    echo 1000 >"$tl_nb_dbg"
    echo 100 >/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
    echo "[$tl_name] tuned: scan_period_max_ms $tl_nb_spm -> $(cat "$tl_nb_dbg"), promote rate" \
      "limit $tl_nb_rl -> $(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps) MB/s"
  fi
  echo true >/sys/kernel/mm/numa/demotion_enabled
  echo 2 >/proc/sys/kernel/numa_balancing
}

tl_nb2_stop() {
  echo "$tl_nb_mode" >/proc/sys/kernel/numa_balancing
  echo "$tl_nb_dem" >/sys/kernel/mm/numa/demotion_enabled
  echo "$tl_nb_rl" >/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
  [ -z "$tl_nb_spm" ] || echo "$tl_nb_spm" >"$tl_nb_dbg"
}

# tl_node_ranges NODE: the physical address ranges of NODE's memory, one "START END" line (bytes,
# END exclusive) per run of contiguous memory blocks (/sys/devices/system/node/nodeN/memoryM
# and /sys/devices/system/memory/block_size_bytes, hex).
tl_node_ranges() {
  tl_bs=$(($(printf '%d' "0x$(cat /sys/devices/system/memory/block_size_bytes)")))
  for m in /sys/devices/system/node/node"$1"/memory[0-9]*; do
    echo "${m##*memory}"
  done | sort -n | awk -v bs="$tl_bs" '
    NR == 1 || $1 != last + 1 { if (NR > 1) printf "%.0f %.0f\n", s * bs, (last + 1) * bs; s = $1 }
    { last = $1 }
    END { if (NR > 0) printf "%.0f %.0f\n", s * bs, (last + 1) * bs }'
}

tl_damon=/sys/kernel/mm/damon/admin/kdamonds
# Most regions per kdamond (monitoring_attrs/nr_regions/max: DAMON's default, as damo sets it).
tl_damon_max_regions="$(rig_param DAMON_MAX_REGIONS 1000)"
# The schemes' apply interval, microseconds. damo and mtier.c use 1 s; we use 0 (= every
# aggregation interval). Why: 7.3.4's damon_set_attrs() (mm/damon/core.c) sets every scheme's
# next_apply_sis afresh, and the intervals auto-tuner calls it every `aggrs` (3) aggregations
# unless its adaptation is exactly 1.0. So while sample_us stays at its 5 ms floor (GUPS's node 1
# sees more than 4% of checks accessed), the apply deadline (1 s = 200 samples) moves forward
# every 60 samples and migrate_hot is never applied: measured in this rig with 1 s, 67
# aggregations in 10 s, no damos_esz event, nr_tried 0 and effective_bytes 0 for a whole
# 60 s arm (and the same for 120 s in an earlier attempt). The quota (200 MiB per 1 s
# reset interval) still bounds the rate. scripts/bench's DAMON_APPLY_US overrides it.
tl_damon_apply_us="$(rig_param DAMON_APPLY_US 0)"

# tl_damon_ctx KDAMOND NODE ACTION TARGET-NID NR-MIN NR-MAX GOAL-METRIC GOAL-BP FILTER-ALLOW: one
# paddr context over NODE's physical ranges with one DAMOS scheme, set up as damo's
# scripts/mem_tier.sh and the kernel's samples/damon/mtier.c do on 6.16+ (their settings, our
# shell): intervals auto-tuned to 4% of checks seeing an access over 3 aggregations, sample
# interval 5 ms..10 s; the scheme applied every 1 s, quota 200 MiB per 1 s, auto-tuned towards
# GOAL-METRIC = GOAL-BP of node 0; one `young` filter (allow for promotion, reject for demotion).
tl_damon_ctx() {
  k="$tl_damon/$1"
  echo 1 >"$k/contexts/nr_contexts"
  c="$k/contexts/0"
  echo paddr >"$c/operations"
  echo 5000 >"$c/monitoring_attrs/intervals/sample_us"
  echo 100000 >"$c/monitoring_attrs/intervals/aggr_us"
  g="$c/monitoring_attrs/intervals/intervals_goal"
  echo 400 >"$g/access_bp"
  echo 3 >"$g/aggrs"
  echo 5000 >"$g/min_sample_us"
  echo 10000000 >"$g/max_sample_us"
  echo 10 >"$c/monitoring_attrs/nr_regions/min"
  echo "$tl_damon_max_regions" >"$c/monitoring_attrs/nr_regions/max"
  echo 1 >"$c/targets/nr_targets"
  r="$c/targets/0/regions"
  rf="/tmp/damon-ranges-$2"
  tl_node_ranges "$2" >"$rf"
  wc -l <"$rf" >"$r/nr_regions"
  i=0
  while read -r s e; do
    echo "$s" >"$r/$i/start"
    echo "$e" >"$r/$i/end"
    i=$((i + 1))
  done <"$rf"
  echo 1 >"$c/schemes/nr_schemes"
  s="$c/schemes/0"
  echo "$3" >"$s/action"
  echo "$4" >"$s/target_nid"
  echo "$tl_damon_apply_us" >"$s/apply_interval_us"
  echo 0 >"$s/access_pattern/sz/min"
  echo 18446744073709551615 >"$s/access_pattern/sz/max"
  echo "$5" >"$s/access_pattern/nr_accesses/min"
  echo "$6" >"$s/access_pattern/nr_accesses/max"
  echo 0 >"$s/access_pattern/age/min"
  echo 4294967295 >"$s/access_pattern/age/max"
  echo 209715200 >"$s/quotas/bytes"
  echo 1000 >"$s/quotas/reset_interval_ms"
  echo 1 >"$s/quotas/goals/nr_goals"
  echo "$7" >"$s/quotas/goals/0/target_metric"
  echo "$8" >"$s/quotas/goals/0/target_value"
  echo 0 >"$s/quotas/goals/0/nid"
  f="$s/filters"
  [ -d "$s/ops_filters" ] && f="$s/ops_filters"
  echo 1 >"$f/nr_filters"
  echo young >"$f/0/type"
  echo Y >"$f/0/matching"
  echo "$9" >"$f/0/allow"
  echo "[$tl_name] kdamond $1: $3 of node $2 ($(tr '\n' ' ' <"$rf" | sed 's/ $//')) to node $4," \
    "nr_accesses $5..$6, goal $7 $8 bp of node 0, young filter allow=$9"
}

# tl_damon_tier_start: the kernel-damon arm: two kdamonds of our own (none may exist before):
# 0 promotes hot pages of node 1 (migrate_hot to 0, nr_accesses >= 1 of the 20 checks an
# aggregation has, damo's "5%", aiming node 0 at 99.7% used), 1 demotes cold pages of node 0
# (migrate_cold to 1, nr_accesses 0, aiming node 0 at 0.5% free).
tl_damon_tier_start() {
  n="$(cat "$tl_damon/nr_kdamonds")"
  check "[$tl_name] no kdamond exists before the arm (nr_kdamonds $n)" [ "$n" = 0 ] || return 1
  : >/tmp/damon-quotas
  echo 2 >"$tl_damon/nr_kdamonds"
  tl_damon_ctx 0 1 migrate_hot 0 1 4294967295 node_mem_used_bp 9970 Y
  tl_damon_ctx 1 0 migrate_cold 1 0 0 node_mem_free_bp 50 N
  echo on >"$tl_damon/0/state" && echo on >"$tl_damon/1/state"
  check "[$tl_name] both kdamonds run (pids $(cat "$tl_damon/0/pid") $(cat "$tl_damon/1/pid"))" \
    [ "$(cat "$tl_damon/0/pid")" -gt 0 ] && [ "$(cat "$tl_damon/1/pid")" -gt 0 ]
}

# tl_damon_scheme K: "tried N applied N (M MiB) quota Q MiB sample_us S" of kdamond K's scheme,
# refreshed (update_schemes_stats, update_schemes_effective_quotas, update_tuned_intervals).
# Sets tl_ds_applied and tl_ds_quota (bytes) of that scheme and appends "K QUOTA" to
# /tmp/damon-quotas (the caller may run in a subshell).
tl_damon_scheme() {
  for cmd in update_schemes_stats update_schemes_effective_quotas update_tuned_intervals; do
    echo "$cmd" >"$tl_damon/$1/state" 2>/dev/null
  done
  c="$tl_damon/$1/contexts/0"
  s="$c/schemes/0"
  tl_ds_applied="$(cat "$s/stats/sz_applied")"
  tl_ds_quota="$(cat "$s/quotas/effective_bytes")"
  echo "$1 $tl_ds_quota" >>/tmp/damon-quotas
  echo "tried $(cat "$s/stats/nr_tried") applied $(cat "$s/stats/nr_applied")" \
    "($((tl_ds_applied / 1048576)) MiB) quota $tl_ds_quota B" \
    "goal $(cat "$s/quotas/goals/0/target_value") bp" \
    "sample_us $(cat "$c/monitoring_attrs/intervals/sample_us")"
}

# tl_damon_progress: both schemes' figures (the arm's per-second progress), plus the kernel's.
tl_damon_progress() {
  free0="$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo)"
  echo "node 0 free $free0 MiB; promote: $(tl_damon_scheme 0); demote: $(tl_damon_scheme 1);" \
    "$(tl_vm_progress)"
}

# tl_damon_tier_stop: prints and checks the schemes' final figures (the kernel acted: the promote
# scheme applied bytes and had a non-zero effective quota at some point), then turns both
# kdamonds off and removes them.
tl_damon_tier_stop() {
  tl_damon_scheme 0 >/tmp/damon-scheme-0
  pa="$tl_ds_applied"
  p="$(cat /tmp/damon-scheme-0)"
  d="$(tl_damon_scheme 1)"
  echo "[$tl_name] DAMOS promote: $p; demote: $d"
  check "[$tl_name] DAMOS migrate_hot applied bytes (sz_applied $pa)" [ "${pa:-0}" -gt 0 ]
  qmax="$(awk '$1 == 0 && $2 > m { m = $2 } END { printf "%.0f", m }' /tmp/damon-quotas)"
  check "[$tl_name] DAMOS migrate_hot had a non-zero effective quota (largest $qmax B)" \
    [ "$qmax" -gt 0 ]
  echo off >"$tl_damon/0/state" 2>/dev/null
  echo off >"$tl_damon/1/state" 2>/dev/null
  echo 0 >"$tl_damon/nr_kdamonds"
}

# tl_damon_trace SECONDS: evidence of what both kdamonds do: for SECONDS, DAMON's tracepoints
# (damon_aggregated: one event per region per aggregation; damos_before_apply; damos_esz) in a
# tracefs instance of our own; prints per kdamond pid the aggregations seen (events / regions)
# and the scheme events, then removes the instance.
tl_damon_trace() {
  tr=/sys/kernel/tracing
  [ -d "$tr/instances" ] || mount -t tracefs none "$tr" 2>/dev/null
  i="$tr/instances/tl-damon"
  mkdir -p "$i" || return 0
  for e in damon_aggregated damos_before_apply damos_esz damon_monitor_intervals_tune; do
    [ -e "$i/events/damon/$e/enable" ] && echo 1 >"$i/events/damon/$e/enable"
  done
  sleep "$1"
  echo 0 >"$i/tracing_on"
  awk '/damon_aggregated:/ {
         split($1, a, "-"); p = a[length(a)]; n[p]++
         if (match($0, /nr_regions=[0-9]+/)) r[p] = substr($0, RSTART + 11, RLENGTH - 11) }
       /damos_before_apply:/ { split($1, a, "-"); ap[a[length(a)]]++ }
       /damos_esz:/ { split($1, a, "-"); es[a[length(a)]] = $0 }
       /intervals_tune:/ { split($1, a, "-"); it[a[length(a)]] = $0 }
       END { for (p in n) printf "tl_damon_trace: pid %s: %d region events, nr_regions %s " \
               "(%.1f aggregations), %d scheme applies; last esz: %s; last tune: %s\n",
               p, n[p], r[p], r[p] ? n[p] / r[p] : 0, ap[p], es[p], it[p] }' "$i/trace"
  head -n 3 "$i/trace" | grep -v '^#'
  grep -m 2 damos "$i/trace"
  rmdir "$i" 2>/dev/null
}

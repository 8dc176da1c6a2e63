#!/bin/sh
# Pieces the tiering scenarios share (issue 8), sourced inside the guest after guest-lib.sh:
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
}

# tl_follow SECONDS [PROGRESS-FUNCTION]: one line per second for SECONDS: the hot set's share
# on node 0 and what PROGRESS-FUNCTION prints (e.g. tierd's tick line). Sets tl_reached (seconds
# since tl_arm_begin until >= 90% of the hot set was on node 0; empty if never), tl_below_after
# (samples below 90% after that) and leaves tl_pct at the last sample.
tl_follow() {
  tl_reached=""
  tl_below_after=0
  tl_t=0
  while [ $tl_t -lt "$1" ]; do
    sleep 1
    tl_t=$(($(date +%s) - tl_start))
    tl_hot
    tl_kt_sample "$tl_kt1"
    tl_prog=""
    [ -n "$2" ] && tl_prog="$($2)"
    echo "[$tl_name] t=${tl_t}s hot set on fast: ${tl_pct:-?}% | $tl_prog"
    tl_whole="${tl_pct%%.*}"
    if [ -n "$tl_reached" ]; then
      [ "${tl_whole:-0}" -lt 90 ] && tl_below_after=$((tl_below_after + 1))
    elif [ "${tl_whole:-0}" -ge 90 ]; then
      tl_reached=$tl_t
      echo "[$tl_name] hot set reached 90% on the fast node after ${tl_t}s"
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

# tl_start_tierd CONFIG: starts tierd with CONFIG, log in $RIG_OUT/tierd-NAME.log; sets tl_tpid.
tl_start_tierd() {
  tl_tlog="$RIG_OUT/tierd-$tl_name.log"
  "$RIG_BIN/tierd" --config "$1" >"$tl_tlog" 2>&1 &
  tl_tpid=$!
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

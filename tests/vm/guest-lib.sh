#!/bin/sh
# Helpers for scenarios, sourced inside the guest (busybox ash): `. "$RIG_SRC/tests/vm/guest-lib.sh"`.
# Each check prints "ok - WHAT" or "FAIL - WHAT" on the console and appends the same line to
# $RIG_OUT/checks; rig_done exits 0 only if no check failed (so every check runs even after a
# failure, and the log shows them all).

rig_failed=0

# check WHAT COMMAND...: runs COMMAND, records its success or failure under WHAT; returns 0 on
# success and 1 on failure (so `if check ...; then` can skip what depends on it).
check() {
  check_what="$1"
  shift
  if "$@"; then
    echo "ok - $check_what" | tee -a "$RIG_OUT/checks"
    return 0
  fi
  echo "FAIL - $check_what" | tee -a "$RIG_OUT/checks"
  rig_failed=$((rig_failed + 1))
  return 1
}

# jchecks FILE FILTER: several checks with one jq run (each jq start costs time under TCG). FILTER
# yields one [OK, WHAT] pair per check (OK a boolean); each is recorded like `check`. Returns 1 if
# any failed or the file is not JSON.
jchecks() {
  jchecks_out="$(jq -r "$2"' | "\(if .[0] == true then 1 else 0 end) \(.[1])"' "$1")" || {
    fail "jq could not read $1"
    return 1
  }
  if [ -z "$jchecks_out" ]; then
    fail "no JSON in $1"
    return 1
  fi
  jchecks_rc=0
  while read -r ok desc; do
    [ -n "$desc" ] || continue
    check "$desc" [ "$ok" = 1 ] || jchecks_rc=1
  done <<EOF_JCHECKS
$jchecks_out
EOF_JCHECKS
  return $jchecks_rc
}

# fail WHAT: records a failure found by the scenario itself.
fail() {
  echo "FAIL - $1" | tee -a "$RIG_OUT/checks"
  rig_failed=$((rig_failed + 1))
}

# need_bin NAME: path of a project binary in the shared build folder, or exits with a clear reason
# (a missing binary is a failure, never a skip).
need_bin() {
  if [ ! -x "$RIG_BIN/$1" ]; then
    echo "FAIL - $1 not built: $RIG_BIN/$1 is missing (build the project, e.g. cmake --build --preset dev)" |
      tee -a "$RIG_OUT/checks"
    exit 2
  fi
  echo "$RIG_BIN/$1"
}

# jcheck WHAT FILE FILTER: a check that jq FILTER on the JSON in FILE is true (host jq via /usr).
jcheck() {
  check "$1" jq_true "$2" "$3"
}

# jq_true FILE FILTER: whether jq FILTER on FILE yields true (quietly). An empty or missing FILE
# is false: Debian 12's jq 1.6 exits 0 under -e when it read no input at all.
jq_true() {
  jq_true_out="$(jq -e "$2" "$1" 2>/dev/null)" || return 1
  [ -n "$jq_true_out" ]
}

# tier_of NODE: the memory_tier number the kernel put NODE in (empty if none).
tier_of() {
  for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
    [ -r "$d/nodelist" ] || continue
    if in_list "$1" "$(cat "$d/nodelist")"; then
      echo "${d##*memory_tier}"
      return 0
    fi
  done
}

# in_list N LIST: whether N is in a kernel cpu/node list like "0-1,4".
in_list() {
  for part in $(echo "$2" | tr ',' ' '); do
    case "$part" in
      *-*) [ "$1" -ge "${part%-*}" ] && [ "$1" -le "${part#*-}" ] && return 0 ;;
      *) [ "$1" = "$part" ] && return 0 ;;
    esac
  done
  return 1
}

# in_words WORD TEXT: whether WORD is one of TEXT's whitespace-separated words.
in_words() {
  for w in $2; do
    [ "$w" = "$1" ] && return 0
  done
  return 1
}

# rig_wait_line FILE PATTERN SECONDS: waits up to SECONDS for a line matching PATTERN (grep) in
# FILE, polling every 0.1 s; returns 1 when it never came.
rig_wait_line() {
  rig_wl_i=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    rig_wl_i=$((rig_wl_i + 1))
    [ "$rig_wl_i" -gt $(($3 * 10)) ] && return 1
    usleep 100000
  done
}

# rig_param KEY DEFAULT: the value of KEY from the host's $TIERD_VM_PARAMS (tests/vm/run.sh
# writes them to $RIG_OUT/params), or DEFAULT.
rig_param() {
  rig_v="$(sed -n "s/^$1=//p" "$RIG_OUT/params" 2>/dev/null | tail -n 1)"
  echo "${rig_v:-$2}"
}

# node_free_mib NODE: MemFree of NODE in MiB (/sys/devices/system/node/nodeN/meminfo).
node_free_mib() {
  awk '/MemFree/ { print int($4 / 1024) }' "/sys/devices/system/node/node$1/meminfo"
}

# rig_done: ends the scenario with the checks' verdict.
rig_done() {
  if [ "$rig_failed" -eq 0 ]; then
    echo "scenario $RIG_SCENARIO: all checks passed"
    exit 0
  fi
  echo "scenario $RIG_SCENARIO: $rig_failed check(s) failed"
  exit 1
}

# --- memsim (scenarios with "# rig: memsim=sample|count|cost"; tests/vm/memsim/README.md) ------
# The plugin publishes its counters to $RIG_OUT/memsim.stats at least 5 times a second. With
# memsim=sample it counts from rig_mem_start on, during 100 ms of every second: shares are right,
# counts partial.

# rig_mem_start: with memsim=sample, the plugin counts nothing (and costs nothing) until this is
# called; it returns once the plugin counts (fails after 60 s). Does nothing in count and cost
# modes, which count from boot.
rig_mem_start() {
  grep -q '^active ' "$RIG_OUT/memsim.stats" 2>/dev/null || return 0
  : >"$RIG_OUT/memsim.start"
  rig_i=0
  while ! grep -qx 'active 1' "$RIG_OUT/memsim.stats" 2>/dev/null; do
    rig_i=$((rig_i + 1))
    if [ $rig_i -gt 300 ]; then
      fail "memsim did not start counting within 60 s of rig_mem_start"
      return 1
    fi
    sleep 0.2
  done
}

# rig_mem_dilate: with memsim=dilated, measures TCG's slowdown D in this boot (tierd-memsim spin:
# gups's update loop without misses, in the guest against run.sh's run of it on the host,
# $RIG_OUT/memsim.host-spin), hands it to the plugin ($RIG_OUT/memsim.dilate) and returns once the
# plugin charges with it (fails after 30 s). From then on a miss to node N costs D * LAT_N and a
# streaming miss D * 64 B / BW_N (tests/vm/memsim/README.md). Prints "memsim dilation D (...)" and
# sets RIG_DILATE=D. Call it while the guest is otherwise idle.
rig_mem_dilate() {
  rig_host_spin="$(awk '$1 == "spin" { print $3 }' "$RIG_OUT/memsim.host-spin" 2>/dev/null)"
  if [ -z "$rig_host_spin" ] || ! grep -q '^dilate ' "$RIG_OUT/memsim.stats" 2>/dev/null; then
    fail "rig_mem_dilate needs memsim=dilated (no host spin time or no dilate line in memsim.stats)"
    return 1
  fi
  rig_guest_spin="$("$RIG_BIN/tierd-memsim" spin --reps 5 --loads 2000000 | awk '$1 == "spin" { print $3 }')"
  RIG_DILATE="$(awk -v g="$rig_guest_spin" -v h="$rig_host_spin" 'BEGIN { if (g > 0 && h > 0) printf "%.2f", (g / h < 1 ? 1 : g / h) }')"
  if [ -z "$RIG_DILATE" ]; then
    fail "rig_mem_dilate: no spin time in the guest"
    return 1
  fi
  # written whole, then renamed: the plugin polls the file from the host and must never read it
  # half-written (it also waits for the newline)
  echo "$RIG_DILATE" >"$RIG_OUT/memsim.dilate.tmp" && mv "$RIG_OUT/memsim.dilate.tmp" "$RIG_OUT/memsim.dilate"
  rig_i=0
  while ! grep -q '^dilate [1-9]' "$RIG_OUT/memsim.stats" 2>/dev/null; do
    rig_i=$((rig_i + 1))
    if grep -q '^dilate .*rejected' "$RIG_OUT/memsim.stats"; then
      fail "memsim rejected the dilation $RIG_DILATE (see the plugin's message in the boot log)"
      return 1
    fi
    if [ $rig_i -gt 150 ]; then
      fail "memsim did not take the dilation $RIG_DILATE within 30 s"
      return 1
    fi
    sleep 0.2
  done
  echo "memsim dilation $RIG_DILATE (gups's update loop: $rig_guest_spin ns in the guest, $rig_host_spin ns on the host);" \
    "charges per miss: $(awk '$1 == "charge" { printf "node %s %s ns ", $2, $3 } $1 == "stream" { printf "(stream %s ns) ", $3 }' "$RIG_OUT/memsim.stats")"
}

# rig_mem_mark NAME: remembers the counters now (a publication made after this call began) as
# mark NAME (a file under /tmp).
rig_mem_mark() {
  "$RIG_BIN/tierd-memsim" mark "/tmp/memsim-mark.$1"
}

# rig_mem [NAME]: LLC-model misses per node since mark NAME (since boot without NAME), one line
# per node: "NODE user_reads user_writes kernel_reads kernel_writes" after a header line.
rig_mem() {
  if [ -n "${1:-}" ]; then
    "$RIG_BIN/tierd-memsim" mem --since "/tmp/memsim-mark.$1"
  else
    "$RIG_BIN/tierd-memsim" mem
  fi
}

# rig_frame_heat PID [NAME]: accesses and misses per 2 MiB virtual region of PID (since mark NAME,
# or since boot): lines "region 0xSTART NODE ACCESSES MISSES" (the region's per-frame counts
# reached through /proc/PID/pagemap; a base page gets 1/512 of its frame's counts) and per node
# "total node N accesses A misses M".
rig_frame_heat() {
  if [ -n "${2:-}" ]; then
    "$RIG_BIN/tierd-memsim" heat "$1" --since "/tmp/memsim-mark.$2"
  else
    "$RIG_BIN/tierd-memsim" heat "$1"
  fi
}

# rig_heat_share FILE: node 0's shares from a rig_frame_heat output, "ACCESS_PCT MEMORY_PCT
# MISS_PCT": of the process's accesses, of its 2 MiB regions (where they live now), and of its
# LLC-model misses (its memory traffic); one decimal each, "- - -" when there were no accesses.
rig_heat_share() {
  awk '$1 == "total" { a[$3] = $5; m[$3] = $7; t += $5; tm += $7 }
       $1 == "region" { r++; if ($3 == 0) r0++ }
       END {
         if (t <= 0 || r <= 0) { print "- - -"; exit }
         miss = "-"
         if (tm > 0) miss = sprintf("%.1f", 100 * m[0] / tm)
         printf "%.1f %.1f %s\n", 100 * a[0] / t, 100 * r0 / r, miss
       }' "$1"
}

# rig_access_share PID NAME SECONDS: node 0's shares of PID's accesses over the next SECONDS
# (rig_heat_share's "ACCESS_PCT MEMORY_PCT MISS_PCT"); the rig_frame_heat output is kept in
# $RIG_OUT/heat-NAME.txt.
rig_access_share() {
  rig_mem_mark "$2"
  sleep "$3"
  rig_frame_heat "$1" "$2" >"$RIG_OUT/heat-$2.txt"
  rig_heat_share "$RIG_OUT/heat-$2.txt"
}

# rig_share_series PID NAME PERIOD [T0]: until PID exits or the caller kills it (run it in the
# background: `rig_share_series ... & pid=$!`, then kill and wait), node 0's share of PID's
# LLC-model misses over each next PERIOD seconds (rig_access_share's MISS_PCT, the tables'
# fast_access_share measure; its last sample's heat in $RIG_OUT/heat-NAME-series.txt), as lines
# "SECONDS MISS_PCT" in $RIG_OUT/share-NAME.tsv (SECONDS since T0, epoch seconds, default the
# call, at the period's end; a period without misses is left out). Each sample is one pagemap
# walk of PID by tierd-memsim heat, the same in every arm.
rig_share_series() {
  # (globals, not local: POSIX sh; the function runs in a background subshell)
  rig_ss_t0="${4:-$(date +%s)}"
  : >"$RIG_OUT/share-$2.tsv"
  while kill -0 "$1" 2>/dev/null; do
    rig_ss="$(rig_access_share "$1" "$2-series" "$3" 2>/dev/null)"
    rig_ss="${rig_ss##* }"
    [ "$rig_ss" = - ] || echo "$(($(date +%s) - rig_ss_t0)) $rig_ss" >>"$RIG_OUT/share-$2.tsv"
  done
}


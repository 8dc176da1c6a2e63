#!/usr/bin/env bash
# Boots the emulated DRAM+CXL machine once per scenario and reports pass/fail per scenario.
# Usage: tests/vm/run.sh SCENARIO[@KERNEL]...   (names of files in tests/vm/scenarios/; @6.12,
#        @7.3 or @patched boots that kernel whatever the header says, results in
#        runs/SCENARIO@KERNEL)
#
# Each scenario is a busybox sh script run as the guest's workload by init.sh. Its header may set,
# in lines "# rig: KEY=VALUE":
#   topology=2node|3node   file in tests/vm/topologies/ (default 2node)
#   mem=SIZE0,SIZE1,...    node sizes overriding the topology's (e.g. 1G,4G)
#   append=ARGS            extra kernel arguments (e.g. hugepagesz=1G hugepages=0:1,1:1)
#   timeout=SECONDS        limit for the whole boot (default $TIERD_VM_TIMEOUT or 300)
#   kernel=7.3|6.12|patched|lean  the guest kernel (default 7.3, Debian trixie-backports; 6.12 is
#                          bookworm-backports' LTS, kept in the scenarios that guard compatibility;
#                          patched is Debian's 7.3.4 source with kernel-patches/7.3/series and our
#                          lean guest config, built by kernel-patches/build: a cold build takes
#                          tens of minutes, then it is cached outside the clone); lean is the
#                          same source and config without the series (kernel-patches/build
#                          --stock, release 7.3.4-lean): patched's A/B baseline (kernel-ab)
#   damon_stat=off|on      7.3 and patched: DAMON_STAT (built in and on by default in Debian's 7.3
#                          and in our config) holds DAMON exclusively, so the rig boots with
#                          damon_stat.enabled=N (off, the default) unless the scenario checks tierd
#                          beside it (on)
#   gapbs=PROGRAM...       GAPBS programs (e.g. "pr bc") built by build-gapbs.sh (from
#                          $TIERD_GAPBS_DIR or its fallback tarball) and copied to
#                          $RIG_OUT/supplied; with neither source nothing is copied
#   deb=yes                the .deb built by cpack from the build folder, in $RIG_OUT/supplied
#   hotplug=yes|no         yes: each CPU-less node's memory is a pc-dimm (ACPI memory hotplug,
#                          onlined as the scenario's memhp_default_state= says) instead of boot
#                          memory, so all of its blocks can be taken offline (boot memory keeps
#                          the block with the node's own NODE_DATA and memmap); needs memsim=off
#                          and no pmu
#   init=busybox|systemd   the guest's PID 1: init.sh runs the scenario itself (busybox, the
#                          default), or hands PID 1 to the host's systemd on a root whose /usr
#                          is the host's with a writable overlay, and the scenario runs as a
#                          service of it (init.sh's boot_systemd)
#   pmu=pebs|spr|ibs       the emulated PMU: its module (tests/vm/pmu/build.sh, for the stock 7.3
#                          kernel only) in $RIG_OUT/supplied/tierd_pmu_emu.ko (the scenario loads
#                          it), QEMU's Skylake-Server CPU model for pebs (the one libpfm4 and
#                          tierd know as skx; the module registers `cpu`), Icelake-Server with
#                          Sapphire Rapids' model number 143 for spr (libpfm4's spr; the module
#                          adds mem-loads-aux and its group-leader rule) or EPYC-Milan for ibs
#                          (the module registers `ibs_op` as on Zen 3), an ivshmem-plain device backed by
#                          $RIG_OUT/pmu.shm (tests/vm/pmu/pmu_shm.h) and memsim's pmu= on that
#                          file; needs memsim=count, cost or dilated and at most 4032 MiB of RAM
#   memsim=off|sample|count|cost|dilated  the memsim TCG plugin (tests/vm/memsim): off (default), count
#                          (an LLC model counts every access per node and per 2 MiB frame), sample
#                          (count during 100 ms of every second, $TIERD_VM_MEMSIM_SAMPLE=ON:PERIOD
#                          ms, from the scenario's rig_mem_start on: full speed before it, shares
#                          after it without count's cost in cache-model contention) or cost (count, and each LLC
#                          miss to node N delays the vCPU by LAT_N - LAT_cpu ns) or dilated
#                          (cost, until the scenario's rig_mem_dilate measures TCG's slowdown D
#                          against $RIG_OUT/memsim.host-spin, which this script measures on the
#                          host before the boot; then a miss to node N costs D * LAT_N and a
#                          streaming miss D * 64 B / BW_N); counters in
#                          $RIG_OUT/memsim.stats (guest-lib.sh: rig_mem, rig_frame_heat)
# Environment:
#   TIERD_VM_CACHE   kernel, initramfs, logs and results (default <repo>/build/vm)
#   TIERD_BUILD_DIR  CMake build folder shared with the guest at /mnt/build (default <repo>/build)
#   TIERD_VM_TIMEOUT default boot timeout in seconds
#   TIERD_VM_TOPOLOGY overrides every scenario's topology (for utilities like capture-topology)
#   TIERD_VM_MEMSIM  overrides every scenario's memsim= (e.g. to measure the plugin's cost)
#   TIERD_VM_PMU_NS  ns memsim charges a vCPU per emulated PMU record in cost and dilated modes
#                    (default: 250 for pmu=pebs, none for pmu=ibs)
#   TIERD_VM_KERNEL  overrides every scenario's kernel= (7.3, 6.12 or patched)
#   TIERD_KERNEL_CACHE, TIERD_KERNEL_JOBS  for kernel=patched: see kernel-patches/build
#   TIERD_VM_PARAMS  KEY=VALUE words handed to the scenarios (rig_param KEY DEFAULT in the guest;
#                    scripts/bench passes the workload's parameters this way)
#   TIERD_GAPBS_DIR  a GAPBS checkout (github.com/sbeamer/gapbs, not vendored) for `gapbs`,
#                    instead of build-gapbs.sh's fallback tarball
# Per scenario: console log in $TIERD_VM_CACHE/runs/SCENARIO.log, results written by the guest
# in $TIERD_VM_CACHE/runs/SCENARIO/ (rc = the scenario's exit code). Exit status 0 only if every
# scenario passed; 77 if none failed but one said it cannot run here (it exited 77: a skip). A boot that never reached /init (an early TCG panic) is retried
# once, and the retry is reported; a failure after /init is never retried.
# Exit code path (see init.sh): scenario rc -> isa-debug-exit byte v -> QEMU status (v<<1)|1;
# status 1 means pass, any other status is a failure whose reason is printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export TIERD_VM_CACHE="${TIERD_VM_CACHE:-$repo/build/vm}"
cache="$TIERD_VM_CACHE"
build="${TIERD_BUILD_DIR:-$repo/build}"
default_timeout="${TIERD_VM_TIMEOUT:-300}"
qemu="qemu-system-x86_64"
marker="RIG: /init reached"

die() {
  echo "vm: ERROR: $*" >&2
  exit 1
}

[ $# -ge 1 ] || die "usage: $0 SCENARIO... (files in $here/scenarios)"
command -v "$qemu" >/dev/null || die "$qemu not found (package qemu-system-x86; run scripts/install-deps)"
command -v timeout >/dev/null || die "timeout not found (coreutils)"

mkdir -p "$cache" "$build"
# One rig at a time per cache: two boots would race on the shared results and logs.
exec 9>"$cache/run.lock"
flock -w 1800 9 || die "another run.sh holds $cache/run.lock"


# SIZE (e.g. 512M, 4G) -> MiB
to_mib() {
  case "$1" in
    *[Gg]) echo $((${1%[Gg]} * 1024)) ;;
    *[Mm]) echo $((${1%[Mm]})) ;;
    *) die "bad size '$1' (use M or G)" ;;
  esac
}

# header SCENARIO_FILE KEY -> value of "# rig: KEY=VALUE" (empty when absent)
header() {
  sed -n "s/^# rig: $2=//p" "$1" | head -n1
}

# kernel_series SCENARIO_FILE -> 7.3|6.12|patched|lean (a SCENARIO@KERNEL argument, in $forced_kernel,
# then $TIERD_VM_KERNEL override the header)
forced_kernel=""
kernel_series() {
  local k="${forced_kernel:-${TIERD_VM_KERNEL:-$(header "$1" kernel)}}"
  case "${k:-7.3}" in
    7.3 | 6.12 | patched | lean) echo "${k:-7.3}" ;;
    *) die "$(basename "$1"): kernel=$k (use 7.3, 6.12, patched or lean)" ;;
  esac
}

# prepare_kernel SERIES: fetches (7.3, 6.12) or builds (patched, lean) the kernel into
# $cache/kernel-SERIES and builds its initramfs (all cached), sets vmlinux and initrd. A missing
# kernel is a failure, never a skip: the scripts exit non-zero with the reason.
prepare_kernel() {
  if [ "$1" = patched ]; then
    "$repo/kernel-patches/build" --rig-dir "$cache/kernel-patched" ||
      die "cannot build the patched guest kernel (see above); the rig cannot run"
  elif [ "$1" = lean ]; then
    "$repo/kernel-patches/build" --stock --rig-dir "$cache/kernel-lean" ||
      die "cannot build the lean stock guest kernel (see above); the rig cannot run"
  else
    "$here/fetch-kernel.sh" "$1" || die "cannot fetch the $1 guest kernel (see above); the rig cannot run"
  fi
  "$here/build-initramfs.sh" "$1" || die "cannot build the $1 initramfs (see above)"
  vmlinux="$cache/kernel-$1/vmlinux"
  initrd="$cache/initramfs-$1.cpio.gz"
}

# memsim_mode SCENARIO_FILE -> off|sample|count|cost ($TIERD_VM_MEMSIM overrides the header)
memsim_mode() {
  local m="${TIERD_VM_MEMSIM:-$(header "$1" memsim)}"
  case "${m:-off}" in
    off | sample | count | cost | dilated) echo "${m:-off}" ;;
    *) die "$(basename "$1"): memsim=$m (use off, sample, count, cost or dilated)" ;;
  esac
}

# memsim_args NAME OUTDIR TOTAL_MIB: appends -plugin memsim.so,... to args (uses the topology in T,
# NODES and $memsim, set by qemu_args' caller). Address ranges: QEMU q35 puts the first `lowmem`
# bytes of RAM below 4 GiB (2 GiB when RAM >= 2.75 GiB, else all of it) and the rest from 4 GiB;
# the nodes' memory backends fill RAM in node order. QEMU 7.2's qemu_plugin_hwaddr_phys_addr
# returns the RAMBlock's ram_addr offset + the offset in the block + the backend's address in the
# machine's RAM container; the backends are QEMU's first RAMBlocks, allocated in node order, so
# both are the node's RAM offset `cum` and a container offset c of node i reads as cum_i + c. The
# guest cross-checks the resulting guest-physical ranges with its memory blocks (memsim-calibrate).
memsim_args() {
  local name="$1" outdir="$2" total="$3" i cum=0 size c0 c1 lowmem charge cpu_lat line ways llc
  [ "$memsim" != off ] || return 0
  if [ "$total" -ge 2816 ]; then lowmem=2048; else lowmem="$total"; fi
  llc="$(to_mib "${T[LLC]:?topology: LLC (last-level cache size, e.g. 16M) missing for memsim}")"
  line="${T[LLC_LINE]:-64}" ways="${T[LLC_WAYS]:-16}"
  cpu_lat="${T[LAT_0]}"
  local pa="memsim.so,out=${outdir//,/,,}/memsim.stats,llc=${llc}M,line=$line,ways=$ways"
  if [ "$memsim" = sample ]; then
    pa+=",mode=count,sample=${TIERD_VM_MEMSIM_SAMPLE:-100:1000},start=${outdir//,/,,}/memsim.start"
  elif [ "$memsim" = dilated ]; then
    pa+=",mode=cost,dilate=${outdir//,/,,}/memsim.dilate"
  else
    pa+=",mode=$memsim"
  fi
  for ((i = 0; i < NODES; i++)); do
    size="$(to_mib "${T[MEM_$i]}")"
    c0=$cum c1=$((cum + size))
    # the part below 4 GiB
    if [ "$c0" -lt "$lowmem" ]; then
      local e=$((c1 < lowmem ? c1 : lowmem))
      pa+=",seg=$i:$(((cum + c0) << 20)):$((c0 << 20)):$(((e - c0) << 20))"
      c0=$e
    fi
    # the part from 4 GiB
    if [ "$c0" -lt "$c1" ]; then
      pa+=",seg=$i:$(((cum + c0) << 20)):$(((c0 - lowmem + 4096) << 20)):$(((c1 - c0) << 20))"
    fi
    charge=$((${T[LAT_$i]} - cpu_lat))
    [ "$charge" -ge 0 ] || charge=0
    pa+=",charge=$i:$charge"
    # dilated: the node's HMAT latency and bandwidth (MB/s) as the hardware's; pmu=pebs|spr|ibs: the
    # latency a sampled miss reports
    if [ "$memsim" = dilated ]; then
      pa+=",lat=$i:${T[LAT_$i]},bw=$i:$(($(to_mib "${T[BW_$i]}") * 1048576 / 1000000))"
    elif [ "$pmu" != off ]; then
      pa+=",lat=$i:${T[LAT_$i]}"
    fi
    cum=$c1
  done
  [ "$pmu" = off ] || pa+=",pmu=${outdir//,/,,}/pmu.shm"
  # What a sample costs the hardware beyond the guest's own handler, charged per record where
  # memsim charges (cost, dilated): a PEBS record ~250 ns (the 2017 PEBS overhead study measured
  # ~200-300 ns per record). IBS: no published per-sample figure, so not charged
  # (TIERD_VM_PMU_NS sets one for any PMU).
  local pmu_ns="${TIERD_VM_PMU_NS:-}"
  [ -n "$pmu_ns" ] || case "$pmu" in pebs | spr) pmu_ns=250 ;; esac
  case "$memsim" in
    cost | dilated) [ "$pmu" = off ] || [ -z "$pmu_ns" ] || pa+=",pmu_ns=$pmu_ns" ;;
  esac
  args+=(-plugin "${cache//,/,,}/memsim/$pa")
}

# pmu_mode SCENARIO_FILE -> off|pebs|spr|ibs
pmu_mode() {
  local m
  m="$(header "$1" pmu)"
  case "${m:-off}" in
    off | pebs | spr | ibs) echo "${m:-off}" ;;
    *) die "$(basename "$1"): pmu=$m (use pebs, spr or ibs)" ;;
  esac
}

# qemu_args SCENARIO_FILE NAME OUTDIR -> fills the global array args
qemu_args() {
  local file="$1" name="$2" outdir="$3"
  local topo mem append total=0 i mib cpus
  topo="${TIERD_VM_TOPOLOGY:-$(header "$file" topology)}"
  topo="${topo:-2node}"
  [ -r "$here/topologies/$topo" ] || die "$name: unknown topology '$topo'"
  # Topology files are data: only their known KEY=VALUE lines are read, nothing is executed.
  local NODES="" DIST=""
  declare -A T=()
  while IFS='=' read -r k v; do
    case "$k" in
      NODES) NODES="$v" ;;
      DIST) DIST="${v//\"/}" ;;
      CPUS_* | MEM_* | LAT_* | BW_* | LLC | LLC_LINE | LLC_WAYS) T[$k]="$v" ;;
      '' | \#*) ;;
      *) die "topology $topo: unknown key '$k'" ;;
    esac
  done < <(sed 's/[[:space:]]*#.*//; /^$/d' "$here/topologies/$topo")
  [ -n "$NODES" ] || die "topology $topo: NODES missing"
  mem="$(header "$file" mem)"
  if [ -n "$mem" ]; then
    IFS=',' read -r -a sizes <<<"$mem"
    [ "${#sizes[@]}" -eq "$NODES" ] || die "$name: mem=$mem needs $NODES sizes for topology $topo"
    for ((i = 0; i < NODES; i++)); do T[MEM_$i]="${sizes[$i]}"; done
  fi
  append="$(header "$file" append)"
  case "$(header "$file" init)" in
    '' | busybox) ;;
    systemd) append="rig.init=systemd${append:+ $append}" ;;
    *) die "$name: init=$(header "$file" init) (use busybox or systemd)" ;;
  esac
  local series damon_stat
  series="$(kernel_series "$file")"
  damon_stat="$(header "$file" damon_stat)"
  case "${damon_stat:-off}" in
    off) [ "$series" = 6.12 ] || append="damon_stat.enabled=N${append:+ $append}" ;;
    on) [ "$series" != 6.12 ] || die "$name: damon_stat=on needs kernel=7.3, patched or lean (6.12 has no DAMON_STAT)" ;;
    *) die "$name: damon_stat=$damon_stat (use off or on)" ;;
  esac

  local model=max
  case "$pmu" in
    pebs) model=Skylake-Server ;;
    spr) model=Icelake-Server,model=143 ;;
    ibs) model=EPYC-Milan ;;
  esac
  args=(-machine "q35,hmat=on" -accel "tcg,thread=multi" -cpu "$model,erms=off" -smp 2)
  local hotplug boot_mib=0 dimms=()
  hotplug="$(header "$file" hotplug)"
  case "${hotplug:-no}" in
    no) ;;
    yes)
      if [ "$memsim" != off ] || [ "$pmu" != off ]; then
        die "$name: hotplug=yes needs memsim=off and no pmu (memsim's address map assumes boot memory in node order)"
      fi
      ;;
    *) die "$name: hotplug=$hotplug (use yes or no)" ;;
  esac
  for ((i = 0; i < NODES; i++)); do
    mib="$(to_mib "${T[MEM_$i]:?topology $topo: MEM_$i missing}")"
    total=$((total + mib))
    args+=(-object "memory-backend-ram,id=m$i,size=${mib}M")
    cpus="${T[CPUS_$i]:-}"
    if [ -n "$cpus" ]; then
      args+=(-numa "node,nodeid=$i,cpus=$cpus,memdev=m$i")
      boot_mib=$((boot_mib + mib))
    elif [ "${hotplug:-no}" = yes ]; then
      # The node's memory is a DIMM the guest finds through ACPI memory hotplug (the kernel onlines
      # it as memhp_default_state says), not boot memory: all of its blocks can go offline.
      args+=(-numa "node,nodeid=$i,initiator=0")
      dimms+=(-device "pc-dimm,id=dimm$i,memdev=m$i,node=$i")
    else
      args+=(-numa "node,nodeid=$i,memdev=m$i,initiator=0")
      boot_mib=$((boot_mib + mib))
    fi
  done
  if [ "${#dimms[@]}" -gt 0 ]; then
    args+=(-m "${boot_mib}M,slots=${#dimms[@]},maxmem=$((2 * total))M" "${dimms[@]}")
  else
    args+=(-m "${total}M")
  fi
  # pmu=pebs|spr|ibs: the emulated PMU's shared region, after the nodes' backends (memsim's address
  # arithmetic needs the nodes' RAMBlocks first). memsim sees an access to it as the region's
  # RAMBlock offset (after all node RAM) plus its BAR address (SeaBIOS: just under 4 GiB); that
  # stays above every node segment (at most twice the RAM) while the RAM stays under 4074 MiB.
  if [ "$pmu" != off ]; then
    [ "$total" -le 4032 ] || die "$name: pmu=$pmu needs at most 4032 MiB of guest RAM (memsim would count its region as node memory)"
    args+=(-object "memory-backend-file,id=pmushm,size=1M,share=on,mem-path=${outdir//,/,,}/pmu.shm")
    args+=(-device "ivshmem-plain,memdev=pmushm")
  fi
  memsim_args "$name" "$outdir" "$total"
  local d pair
  for d in $DIST; do # "A-B=D"
    pair="${d%%=*}"
    args+=(-numa "dist,src=${pair%-*},dst=${pair#*-},val=${d##*=}")
  done
  for ((i = 0; i < NODES; i++)); do
    args+=(-numa "hmat-lb,initiator=0,target=$i,hierarchy=memory,data-type=access-latency,latency=${T[LAT_$i]:?LAT_$i missing}")
    args+=(-numa "hmat-lb,initiator=0,target=$i,hierarchy=memory,data-type=access-bandwidth,bandwidth=${T[BW_$i]:?BW_$i missing}")
  done
  # Kernel arguments: maxcpus=1 brings the boot up on one vCPU and init.sh onlines the rest
  # before it reports /init reached (a static key flipped while another vCPU runs can leave that
  # vCPU executing the patch's int3 under multi-threaded TCG: "Oops: int3"); tsc=reliable keeps
  # the clocksource watchdog, which a loaded host's TCG timing trips, from marking the TSC
  # unstable and flipping sched_clock's static key in the middle of a scenario.
  # QEMU option values escape a comma by doubling it.
  local usr_p=/usr src_p="${repo//,/,,}" build_p="${build//,/,,}" out_p="${outdir//,/,,}"
  args+=(
    -nodefaults -nographic -no-reboot -monitor none -serial stdio
    -device "isa-debug-exit,iobase=0xf4,iosize=0x01"
    -virtfs "local,path=$usr_p,mount_tag=usr,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$src_p,mount_tag=src,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$build_p,mount_tag=build,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$out_p,mount_tag=out,security_model=none"
    -kernel "$vmlinux" -initrd "$initrd"
    -append "console=ttyS0 panic=-1 oops=panic numa_balancing=disable nokaslr mitigations=off maxcpus=1 tsc=reliable trace_event=sched:sched_process_exit rdinit=/init rig.scenario=$name rig.topology=$topo${append:+ $append}"
  )
}

# boot NAME FILE LOG OUTDIR TIMEOUT -> QEMU's exit status (124: timed out)
boot() {
  local name="$1" file="$2" log="$3" outdir="$4" limit="$5" status=0
  rm -rf "$outdir"
  mkdir -p "$outdir"
  # $TIERD_VM_PARAMS: KEY=VALUE words for the scenario (rig_param in guest-lib.sh reads them).
  local kv
  for kv in ${TIERD_VM_PARAMS:-}; do
    [[ "$kv" =~ ^[A-Z][A-Z0-9_]*=[A-Za-z0-9._:/-]*$ ]] || die "TIERD_VM_PARAMS: '$kv' is not KEY=VALUE"
    echo "$kv" >>"$outdir/params"
  done
  # "# rig: gapbs=PROGRAM...": GAPBS (not vendored) built on the host, its programs in
  # $RIG_OUT/supplied. build-gapbs.sh exits 3 when there is no GAPBS at all: nothing is supplied
  # and the scenario says it was not run.
  local progs gdir p grc=0
  progs="$(header "$file" gapbs)"
  if [ -n "$progs" ]; then
    gdir="$("$here/build-gapbs.sh")" || grc=$?
    case "$grc" in
      0)
        mkdir -p "$outdir/supplied"
        for p in $progs; do
          [ -x "$gdir/$p" ] || die "$name: GAPBS build in $gdir has no $p"
          cp "$gdir/$p" "$outdir/supplied/"
        done
        ;;
      3) ;;
      *) die "$name: cannot build GAPBS (see above)" ;;
    esac
  fi
  # "# rig: deb=yes": the .deb, built from this build folder by cpack as `cmake --build build
  # --target package` does, in $RIG_OUT/supplied.
  if [ "$(header "$file" deb)" = yes ]; then
    local dtmp
    dtmp="$(mktemp -d)"
    cpack --config "$build/CPackConfig.cmake" -B "$dtmp" >"$dtmp/cpack.log" 2>&1 || {
      cat "$dtmp/cpack.log"
      rm -rf "$dtmp"
      die "$name: cpack cannot build the .deb from $build"
    }
    mkdir -p "$outdir/supplied"
    cp "$dtmp"/tierd_*.deb "$outdir/supplied/"
    rm -rf "$dtmp"
  fi
  # "# rig: pmu=pebs|spr|ibs": the emulated PMU module (tests/vm/pmu, built for the stock 7.3 kernel) in
  # $RIG_OUT/supplied/tierd_pmu_emu.ko, which the scenario loads, and the region it shares with
  # memsim, PMU_SHM_SIZE bytes (pmu_shm.h), created before QEMU maps it.
  pmu="$(pmu_mode "$file")"
  if [ "$pmu" != off ]; then
    local ko
    ko="$("$here/pmu/build.sh" | tail -n1)" || die "$name: cannot build the emulated PMU module (see above)"
    mkdir -p "$outdir/supplied"
    cp "$ko" "$outdir/supplied/"
  fi
  prepare_kernel "$(kernel_series "$file")"
  memsim="$(memsim_mode "$file")"
  if [ "$pmu" != off ]; then
    case "$memsim" in
      count | cost | dilated) truncate -s 1M "$outdir/pmu.shm" ;;
      *) die "$name: pmu=$pmu needs memsim=count, cost or dilated (memsim=$memsim)" ;;
    esac
  fi
  if [ "$memsim" != off ]; then
    "$here/memsim/build.sh" || die "$name: cannot build the memsim plugin (see above)"
  fi
  # memsim=dilated: the loop the guest times to measure TCG's slowdown (rig_mem_dilate), run
  # natively here first, on the same binary, while no guest runs
  if [ "$memsim" = dilated ]; then
    "$build/bin/tierd-memsim" spin --reps 5 --loads 2000000 >"$outdir/memsim.host-spin" ||
      die "$name: cannot time tierd-memsim spin on the host (is $build/bin built?)"
  fi
  qemu_args "$file" "$name" "$outdir"
  echo "# $qemu ${args[*]}" >"$log"
  timeout -k 10 "$limit" "$qemu" "${args[@]}" </dev/null >>"$log" 2>&1 || status=$?
  return "$status"
}

# reached_init LOG OUTDIR: the boot reached /init. Its console line is not enough alone: a kernel
# message printed in the middle of it cuts it (seen in CI: vm.metrics passed in the guest, rc 0,
# and was failed as "never reached /init"); /init also writes init-reached to the out share, which
# boot() empties before every boot.
reached_init() {
  grep -q "$marker" "$1" || [ -e "$2/init-reached" ]
}

runs="$cache/runs"
mkdir -p "$runs"
failed=()
skipped=()
passed=0
for arg in "$@"; do
  name="${arg%%@*}"
  forced_kernel=""
  [ "$name" = "$arg" ] || forced_kernel="${arg#*@}"
  file="$here/scenarios/$name"
  if [ ! -r "$file" ]; then
    echo "vm: FAIL $arg: no such scenario $file"
    failed+=("$arg")
    continue
  fi
  limit="$(header "$file" timeout)"
  limit="${limit:-$default_timeout}"
  log="$runs/$arg.log"
  outdir="$runs/$arg"
  rm -f "$runs/$arg.attempt1.log"
  memsim="$(memsim_mode "$file")"
  echo "vm: booting $arg (kernel $(kernel_series "$file"), timeout ${limit}s, memsim=$memsim, log $log)"
  start=$SECONDS
  status=0
  boot "$name" "$file" "$log" "$outdir" "$limit" || status=$?
  note=""
  if [ "$status" -ne 1 ] && ! reached_init "$log" "$outdir"; then
    mv "$log" "$runs/$arg.attempt1.log"
    echo "vm: $arg: boot never reached /init (QEMU status $status; early TCG panic?), retrying once;" \
      "first log kept as $runs/$arg.attempt1.log"
    status=0
    boot "$name" "$file" "$log" "$outdir" "$limit" || status=$?
    note=", retried once after a boot that never reached /init"
  fi
  secs=$((SECONDS - start))
  rc_file="$(cat "$outdir/rc" 2>/dev/null || echo none)"
  reason=""
  case "$status" in
    1)
      if [ "$rc_file" = 0 ]; then
        reason=""
      else
        reason="QEMU reported exit 0 but the results share says rc=$rc_file"
      fi
      ;;
    124 | 137) reason="timed out after ${limit}s" ;;
    0) reason="the guest stopped without reporting an exit code (kernel panic, oops or reboot?)" ;;
    *)
      if [ $((status % 2)) -eq 1 ]; then
        v=$(((status - 1) / 2))
        if [ "$v" -eq 125 ] && [ "$rc_file" = none ]; then
          reason="guest /init failed before the scenario ran (see log)"
        else
          reason="scenario exited with $v (rc file: $rc_file)"
        fi
      else
        reason="QEMU failed with status $status"
      fi
      ;;
  esac
  if ! reached_init "$log" "$outdir"; then
    reason="${reason:-?}; the boot never reached /init"
  fi
  if grep -q '^memsim: ERROR' "$log"; then
    reason="${reason:-?}; $(grep -m1 '^memsim: ERROR' "$log")"
  elif [ "$memsim" != off ] && ! grep -qx 'final 1' "$outdir/memsim.stats" 2>/dev/null; then
    reason="${reason:+$reason; }memsim=$memsim but the plugin wrote no final $outdir/memsim.stats"
  fi
  if [ "$status" -eq $((2 * 77 + 1)) ] && [ "$rc_file" = 77 ]; then
    # The scenario said it cannot run here (exit 77, e.g. gapbs without GAPBS): a skip, which
    # ctest reports as skipped (SKIP_RETURN_CODE 77), never as passed.
    echo "vm: SKIP $arg: $(grep -m1 'NOT RUN' "$log" | sed 's/^.*NOT RUN: *//') (${secs}s$note)"
    skipped+=("$arg")
  elif [ -z "$reason" ]; then
    echo "vm: PASS $arg (${secs}s$note)"
    passed=$((passed + 1))
  else
    echo "vm: ---- last 40 lines of $log ----"
    tail -n 40 "$log" | sed 's/^/  | /'
    echo "vm: FAIL $arg: $reason (${secs}s$note; log $log)"
    failed+=("$arg")
  fi
done

echo "vm: $passed passed, ${#failed[@]} failed${failed[*]:+: ${failed[*]}}${skipped[*]:+, ${#skipped[@]} skipped: ${skipped[*]}}"
[ "${#failed[@]}" -eq 0 ] || exit 1
[ "${#skipped[@]}" -eq 0 ] || exit 77

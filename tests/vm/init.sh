#!/bin/sh
# /init of the rig's guest (busybox ash, PID 1). Copied into the initramfs by build-initramfs.sh.
#
# Mounts the kernel filesystems, loads the 9p modules, mounts the host shares, runs the scenario
# named by `rig.scenario=` on the kernel command line and hands its exit code to QEMU through
# isa-debug-exit. Host shares (9p, mount tags set by run.sh):
#   usr   -> /usr        host /usr, read-only: the shared libraries of the project's binaries
#   src   -> /mnt/src    the repository, read-only: scenarios and tests/vm/guest-lib.sh
#   build -> /mnt/build  the CMake build folder, read-only: bin/tierctl, bin/tierd, workloads
#   out   -> /mnt/out    this scenario's results folder, writable
# Exit protocol: the scenario's code rc (clamped to 1..127 when non-zero) is written as one byte v
# to I/O port 0xf4; QEMU then exits with status (v << 1) | 1, which run.sh maps back: 1 -> pass,
# 2v+1 -> scenario failed with v. Anything else (0 from a poweroff/panic reboot) is a rig failure.
# The line "RIG: /init reached" and the file init-reached in the out share tell run.sh the kernel
# booted (early TCG panics are retried once). The file is the firm sign: a console line can be cut
# by a kernel message printed in its middle.

PATH=/bin:/usr/bin:/usr/sbin:/sbin
export PATH

# With the argument run-scenario this file runs under systemd instead (rig.init=systemd, see
# boot_systemd below): the machine is up, only the scenario part runs.
mode="${1:-boot}"

# Writes v (0..127) to isa-debug-exit: QEMU exits with (v << 1) | 1 and this never returns.
rig_exit() {
  v=$1
  [ "$v" -ge 0 ] 2>/dev/null || v=127
  [ "$v" -le 127 ] || v=127
  echo "RIG: exit code $v"
  # shellcheck disable=SC2059 # the octal escape is the point
  printf "\\$(printf '%03o' "$v")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
  # Only reached without isa-debug-exit: power off (QEMU exits 0, which run.sh reports as a failure).
  echo "RIG: isa-debug-exit did not stop the machine"
  poweroff -f
  sleep 60
}

die() {
  echo "RIG: init failed: $*"
  rig_exit 125
}

# boot_systemd: rig.init=systemd. Builds a root for systemd on a tmpfs (/usr: an overlay of the
# host's /usr, writable so that dpkg can install into it; /etc: the few files systemd and the
# scenarios need; /bin, /sbin, /lib, /lib64: links into /usr as on the host), moves the kernel
# filesystems and the shares into it and hands PID 1 to the host's systemd. Its default target,
# rig.target, starts rig-scenario.service, which runs this file with run-scenario: the scenario
# then runs as a service of that systemd and ends the machine with rig_exit as usual.
boot_systemd() {
  r=/sysroot
  mkdir -p "$r"
  mount -t tmpfs -o mode=0755 tmpfs "$r" || die "tmpfs on $r"
  mkdir -p "$r/usr" "$r/.usr-rw/upper" "$r/.usr-rw/work" "$r/etc/systemd/system" "$r/rig" \
    "$r/proc" "$r/sys" "$r/dev" "$r/run" "$r/tmp" "$r/var/tmp" "$r/root" "$r/srv" \
    "$r/mnt/src" "$r/mnt/build" "$r/mnt/out"
  chmod 1777 "$r/tmp" "$r/var/tmp"
  mount -t overlay overlay -o "lowerdir=/usr,upperdir=$r/.usr-rw/upper,workdir=$r/.usr-rw/work" "$r/usr" ||
    die "overlay on $r/usr"
  for l in bin sbin lib lib64; do
    ln -s "usr/$l" "$r/$l"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
    >"$r/etc/passwd"
  printf 'root:x:0:\nsystemd-journal:x:101:\nnogroup:x:65534:\n' >"$r/etc/group"
  echo 5ad1e3f0c2b94a7d8e6f1a2b3c4d5e6f >"$r/etc/machine-id"
  echo rig >"$r/etc/hostname"
  ln -s ../usr/lib/os-release "$r/etc/os-release"
  cp /init "$r/rig/init"
  cp /bin/busybox "$r/rig/busybox"
  printf '%s\n' "[Unit]" "Description=the rig's scenario" "Requires=rig-scenario.service" \
    "After=rig-scenario.service" >"$r/etc/systemd/system/rig.target"
  printf '%s\n' "[Unit]" "Description=rig scenario $scenario" "After=sysinit.target" "" \
    "[Service]" "Type=oneshot" "ExecStart=/rig/busybox sh /rig/init run-scenario" \
    "StandardInput=null" "StandardOutput=tty" "StandardError=inherit" "TTYPath=/dev/console" \
    "TimeoutStartSec=infinity" >"$r/etc/systemd/system/rig-scenario.service"
  ln -s rig.target "$r/etc/systemd/system/default.target"
  for m in /dev /proc /sys /mnt/src /mnt/build /mnt/out; do
    mount --move "$m" "$r$m" || die "mount --move $m"
  done
  echo "RIG: handing PID 1 to systemd"
  exec switch_root "$r" /lib/systemd/systemd
}

if [ "$mode" = boot ]; then
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev
  # The initramfs has no /dev/console node (no mknod at build time): attach stdio to it now.
  exec </dev/console >/dev/console 2>&1
  # run.sh boots the kernel with maxcpus=1: every code patch of the boot (a static key flipped by
  # text_poke_bp, e.g. sched_clock's stable key at late_initcall) then runs with one vCPU, since a
  # second vCPU under multi-threaded TCG can still execute the int3 of a finished patch (an
  # "Oops: int3" at sched_clock_cpu+0x8 stopped CI boots before /init). The other CPUs come up here,
  # before the marker, so a boot that stops while bringing them up is retried like an early panic.
  for cpu in /sys/devices/system/cpu/cpu[0-9]*; do
    if [ -e "$cpu/online" ] && [ "$(cat "$cpu/online")" = 0 ]; then
      echo 1 >"$cpu/online" || echo "RIG: could not bring ${cpu##*/} online"
    fi
  done
  echo "RIG: /init reached"
  mkdir -p /dev/pts /dev/shm /dev/hugepages /tmp /run /sys/fs/cgroup
  mount -t devpts devpts /dev/pts
  mount -t tmpfs tmpfs /dev/shm
  mount -t tmpfs tmpfs /tmp
  mount -t tmpfs tmpfs /run
  mount -t hugetlbfs hugetlbfs /dev/hugepages
  if [ -d /sys/kernel/mm/hugepages/hugepages-1048576kB ]; then
    mkdir -p /dev/hugepages1G
    mount -t hugetlbfs -o pagesize=1G hugetlbfs /dev/hugepages1G
  fi
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
  mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
  mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
  # The scheduler's tracepoint probes stay registered for the whole boot (a TCG workaround, not a
  # tierd need). Enabling a trace event anywhere (tierd's damon_aggregated instance, with the
  # default record-cmd option) registers the sched_switch probe that records comms, and disabling
  # the last one unregisters it: each time, the kernel rewrites the jump-label site in __schedule
  # (text_poke with an int3). Under QEMU's multi-threaded TCG such a rewrite can leave a vCPU
  # trapping on the int3 after the rewrite has finished: "Oops: int3" at __schedule+0x30c
  # (0f 1f 44 00 00, the disabled site), kernel panic. Seen in fleet-safety when its second tierd
  # removed the first's instances, and, once /init itself enabled an event in an
  # instance of its own to keep the probe registered, at that very enable (in CI, 2.9 s into the
  # boot). So run.sh enables sched:sched_process_exit on the kernel command line
  # (trace_event=): the kernel registers the probes while only the boot CPU runs (trace_init and
  # the early initcalls come before SMP bring-up), and none is unregistered or rewritten after.
  # Here only the top-level buffer that event writes to is shrunk to 4 KiB per CPU (nothing reads
  # it; resizing registers no probe).
  if [ -e /sys/kernel/tracing/set_event ]; then
    grep -q '^sched:sched_process_exit$' /sys/kernel/tracing/set_event ||
      echo "RIG: sched:sched_process_exit is not enabled from boot (trace_event= on the command line)"
    echo 4 >/sys/kernel/tracing/buffer_size_kb
  fi

  while read -r m; do
    insmod "/modules/$m.ko" || die "insmod $m"
  done </modules/order

  share() { # TAG DIR OPTIONS
    mkdir -p "$2"
    mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$3" "$1" "$2" || die "mount 9p $1 on $2"
  }
  # /usr never changes during a boot: cache it (fast exec and library loading under TCG).
  share usr /usr ro,cache=loose
  share src /mnt/src ro
  share build /mnt/build ro
  share out /mnt/out rw
  echo "RIG: /init reached" >/mnt/out/init-reached

fi

scenario=""
topology=""
init=""
read -r cmdline </proc/cmdline
for arg in $cmdline; do
  case "$arg" in
    rig.scenario=*) scenario="${arg#rig.scenario=}" ;;
    rig.topology=*) topology="${arg#rig.topology=}" ;;
    rig.init=*) init="${arg#rig.init=}" ;;
  esac
done
[ -n "$scenario" ] || die "no rig.scenario= on the kernel command line"
script="/mnt/src/tests/vm/scenarios/$scenario"
[ -r "$script" ] || die "scenario $script not found"
if [ "$mode" = boot ] && [ "$init" = systemd ]; then
  boot_systemd
fi
# The scenario's shell: busybox's ash everywhere (under systemd the root's /bin/sh is the host's).
shell="sh"
[ "$mode" = boot ] || shell="/rig/busybox sh"

export RIG_SCENARIO="$scenario" RIG_TOPOLOGY="$topology"
export RIG_SRC=/mnt/src RIG_BUILD=/mnt/build RIG_BIN=/mnt/build/bin RIG_OUT=/mnt/out
export HOME=/tmp TMPDIR=/tmp
echo "RIG: kernel $(uname -r), scenario $scenario, topology $topology"
echo "RIG: ---- scenario $scenario begins ----"
cd /tmp || die "cd /tmp"
$shell "$script"
rc=$?
echo "RIG: ---- scenario $scenario ended with $rc ----"
echo "$rc" >/mnt/out/rc
sync
umount /mnt/out
rig_exit "$rc"

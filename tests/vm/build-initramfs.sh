#!/usr/bin/env bash
# Builds the rig's initramfs: busybox-static with a symlink per applet, /init (init.sh) and the
# 9p modules fetched by fetch-kernel.sh, packed as cpio newc + gzip (deterministic: sorted
# entries, fixed owners and mtimes, gzip -n).
#
# The guest's shared libraries are NOT copied in: init.sh mounts the host's /usr read-only over
# 9p and /lib, /lib64 here are symlinks into it (usr-merged like the host). Why: the project's
# binaries are built on this host against its /usr, so the guest sees exactly the libraries they
# were linked with, including ones loaded with dlopen, and any host tool a scenario wants (jq,
# numactl, python3) works too, with no per-binary library lists to keep in sync (ldd-collecting
# misses dlopen and goes stale whenever a dependency is added).
#
# Usage: tests/vm/build-initramfs.sh [SERIES]   (7.3 default, 6.12, patched or lean: the kernel whose
# modules it carries, fetched by fetch-kernel.sh SERIES or, for patched, built by
# kernel-patches/build --rig-dir)
# Output: ${TIERD_VM_CACHE:-<repo>/build/vm}/initramfs-SERIES.cpio.gz. Rebuilt only when an input
# (busybox, init.sh, modules, this script) changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${TIERD_VM_CACHE:-$repo/build/vm}"
series="${1:-7.3}"
kdir="$cache/kernel-$series"
out="$cache/initramfs-$series.cpio.gz"

die() {
  echo "build-initramfs: ERROR: $*" >&2
  exit 1
}

busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox missing (package busybox-static; run scripts/install-deps)"
! ldd "$busybox" >/dev/null 2>&1 ||
  die "$busybox is not statically linked (install busybox-static, not busybox)"
if [ ! -s "$kdir/modules.order" ]; then
  [ "$series" != patched ] || die "no kernel in $kdir: run kernel-patches/build --rig-dir $kdir first"
  [ "$series" != lean ] || die "no kernel in $kdir: run kernel-patches/build --stock --rig-dir $kdir first"
  die "no kernel in $kdir: run tests/vm/fetch-kernel.sh $series first"
fi
for tool in cpio gzip sha256sum; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps)"
done

stamp="$(cat "$busybox" "$here/init.sh" "${BASH_SOURCE[0]}" "$kdir/modules.order" "$kdir"/modules/*.ko |
  sha256sum | cut -d' ' -f1)"
if [ -s "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "build-initramfs: cached $out"
  exit 0
fi

root="$cache/initramfs-$series.root"
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,usr,modules,mnt}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
ln -s bin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
install -m 0755 "$here/init.sh" "$root/init"
cp "$kdir"/modules/*.ko "$root/modules/"
cp "$kdir/modules.order" "$root/modules/order"
mkdir -p "$root/etc"
# nobody: the user tierd's metrics exporter process runs as (daemon.metrics_user's default).
printf 'root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
  >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
  cpio --quiet -o -H newc --owner 0:0 --reproducible) | gzip -9 -n >"$out.tmp"
mv "$out.tmp" "$out"
echo "$stamp" >"$out.stamp"
rm -rf "$root"
echo "build-initramfs: wrote $out ($(stat -c %s "$out") bytes)"

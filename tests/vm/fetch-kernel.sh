#!/usr/bin/env bash
# Fetches a Debian kernel for the QEMU rig, without installing it.
# Usage: tests/vm/fetch-kernel.sh [SERIES]
#   SERIES 7.3 (default): linux-image-amd64 of trixie-backports (7.3.x), the rig's default kernel
#          6.12:          linux-image-amd64 of bookworm-backports (6.12.x, the LTS many fleets run),
#                         kept for the scenarios that guard compatibility (# rig: kernel=6.12)
#
# What it does, all under the cache folder ${TIERD_VM_CACHE:-<repo>/build/vm}:
#   1. writes a PRIVATE apt configuration (apt-SUITE/sources.list naming the suite with the same
#      mirror URI and keyring as the machine's own debian.sources; scripts/lib/private-apt.sh)
#      and runs `apt-get update` and `apt-get download` with it. The machine's apt sources, lists and /boot are never touched.
#   2. resolves the versioned package behind the `linux-image-amd64` metapackage of that suite,
#      downloads it and unpacks it with `dpkg -x` (never installed).
#   3. extracts an uncompressed vmlinux from the bzImage (PVH boot needs the ELF) and collects the
#      9p modules with their dependencies.
# Result in kernel-SERIES/: vmlinux, modules/*.ko (decompressed), modules.order (load order),
# release, config (the kernel's .config, to check CONFIG_ options). Idempotent: a second run with a complete cache does nothing.
# Fails loudly (non-zero, reason on stderr) when anything cannot be fetched: CI must never skip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=scripts/lib/private-apt.sh
. "$repo/scripts/lib/private-apt.sh"
cache="${TIERD_VM_CACHE:-$repo/build/vm}"
series="${1:-7.3}"

die() {
  echo "fetch-kernel: ERROR: $*" >&2
  exit 1
}

case "$series" in
  7.3) suite="trixie-backports" ;;
  6.12) suite="bookworm-backports" ;;
  *) die "unknown kernel series '$series' (use 7.3 or 6.12)" ;;
esac
# The 9p client stack (netfs is a separate module since 6.x) and overlayfs (init.sh's root for
# rig.init=systemd: the host's /usr with a writable layer); order = load order. Modules built
# into a series' kernel are skipped (modules.builtin).
wanted_modules=(netfs 9pnet 9pnet_virtio 9p overlay)

kdir="$cache/kernel-$series"
# cached: whether kdir holds a kernel with every wanted module (loaded or built in).
cached() {
  local m
  [ -s "$kdir/vmlinux" ] && [ -s "$kdir/modules.order" ] && [ -s "$kdir/release" ] || return 1
  for m in "${wanted_modules[@]}"; do
    grep -qx "$m" "$kdir/modules.order" || grep -q "/$m.ko\$" "$kdir/modules.builtin" 2>/dev/null ||
      return 1
  done
}
if cached; then
  echo "fetch-kernel: cached $(cat "$kdir/release") in $kdir"
  exit 0
fi

for tool in apt-get dpkg-deb xz od grep; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps)"
done

# --- 1. private apt configuration (scripts/lib/private-apt.sh) ----------------------------------
# The mirror and keyring of the machine's main Debian entry (the stanza whose Suites list contains
# plain "bookworm"), so the private config uses exactly what the machine is allowed to use.
main_entry="$(private_apt_main_mirror)"
read -r mirror keyring <<<"$main_entry"
aptdir="$cache/apt-$suite"
mkdir -p "$aptdir/debs"
private_apt_init "$aptdir" "deb [signed-by=$keyring] $mirror $suite main"
private_apt_opts+=(-o "APT::Default-Release=$suite")
apt_opts=("${private_apt_opts[@]}")

echo "fetch-kernel: private apt update of $mirror $suite (lists in $aptdir)"
private_apt_update "$aptdir" "$suite"

# --- 2. resolve and download the versioned image package ----------------------------------------
meta_depends="$(apt-cache "${apt_opts[@]}" show "linux-image-amd64/$suite" 2>/dev/null |
  awk '/^Depends:/ { sub(/^Depends: /, ""); print; exit }')" ||
  die "linux-image-amd64 not found in $suite"
pkg="$(tr ',' '\n' <<<"$meta_depends" | sed 's/^ *//; s/ .*//' | grep -E '^linux-image-[0-9].*-amd64(-unsigned)?$' | head -n1)" ||
  true
[ -n "$pkg" ] || die "cannot resolve the image package from 'Depends: $meta_depends'"
case "$pkg" in
  "linux-image-$series".*) ;;
  *) die "$suite's linux-image-amd64 now depends on $pkg, not a $series kernel; update the rig" ;;
esac
version="$(apt-cache "${apt_opts[@]}" show "$pkg/$suite" | awk '/^Version:/ { print $2; exit }')"
echo "fetch-kernel: linux-image-amd64/$suite -> $pkg $version"

# 6.12's image package holds the kernel, its modules and config. 7.3's is split: the image package
# depends on linux-base-REL (config, modules.builtin), linux-binary-REL (vmlinuz) and
# linux-modules-REL (the .ko files), all of the same version; fetch those too.
pkgs=("$pkg")
while read -r dep; do
  pkgs+=("$dep")
done < <(apt-cache "${apt_opts[@]}" show "$pkg/$suite" | awk '/^Depends:/ { sub(/^Depends: /, ""); print; exit }' |
  tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -E '^linux-(base|binary|modules)-[0-9]' || true)
debs=()
for p in "${pkgs[@]}"; do
  deb="$(find "$aptdir/debs" -name "${p}_*.deb" | head -n1)"
  if [ -z "$deb" ]; then
    if ! (cd "$aptdir/debs" && apt-get -q "${apt_opts[@]}" download "$p/$suite") >"$aptdir/download.log" 2>&1; then
      cat "$aptdir/download.log" >&2
      die "apt-get download $p/$suite failed - see above"
    fi
    deb="$(find "$aptdir/debs" -name "${p}_*.deb" | head -n1)"
    [ -n "$deb" ] || die "apt-get download reported success but no ${p}_*.deb in $aptdir/debs"
  fi
  debs+=("$deb")
done

# --- 3. unpack, extract vmlinux, collect modules -----------------------------------------------
tmp="$cache/kernel-$series.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
for deb in "${debs[@]}"; do
  echo "fetch-kernel: unpacking $(basename "$deb")"
  dpkg-deb -x "$deb" "$tmp/root" || die "dpkg -x $deb failed"
done
# 6.12: /boot/vmlinuz-REL; 7.3: /usr/lib/modules/REL/vmlinuz.
bz="$(find "$tmp/root/boot" -name 'vmlinuz-*' 2>/dev/null | head -n1)" || true
if [ -n "$bz" ]; then
  release="${bz##*/vmlinuz-}"
else
  bz="$(find "$tmp/root/usr/lib/modules" -mindepth 2 -maxdepth 2 -name vmlinuz 2>/dev/null | head -n1)" || true
  [ -n "$bz" ] || die "no /boot/vmlinuz-* or /usr/lib/modules/*/vmlinuz in ${pkgs[*]}"
  release="$(basename "$(dirname "$bz")")"
fi
"$here/extract-vmlinux.sh" "$bz" "$tmp/vmlinux" || die "cannot extract vmlinux from $bz"

moddir="$tmp/root/lib/modules/$release"
[ -d "$moddir" ] || moddir="$tmp/root/usr/lib/modules/$release"
[ -d "$moddir" ] || die "no modules folder for $release in $deb"
mkdir -p "$tmp/modules"
: >"$tmp/modules.order"
for m in "${wanted_modules[@]}"; do
  f="$(find "$moddir/kernel" -name "$m.ko*" | head -n1)"
  if [ -z "$f" ]; then
    # Built in (modules.builtin lists it): nothing to load.
    if grep -q "/$m.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
      echo "fetch-kernel: $m is built in"
      continue
    fi
    die "module $m not found in $release"
  fi
  case "$f" in
    *.ko.xz) xz -dc "$f" >"$tmp/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$f" >"$tmp/modules/$m.ko" ;;
    *.ko.gz) gzip -dc "$f" >"$tmp/modules/$m.ko" ;;
    *.ko) cp "$f" "$tmp/modules/$m.ko" ;;
  esac
  echo "$m" >>"$tmp/modules.order"
done
# Check the order against modinfo's depends (a module must come after what it depends on).
if command -v modinfo >/dev/null; then
  seen=" "
  while read -r m; do
    deps="$(modinfo -F depends "$tmp/modules/$m.ko" | tr ',' ' ')"
    for d in $deps; do
      case "$seen" in
        *" $d "*) ;;
        *) grep -q "/$d.ko\$" "$moddir/modules.builtin" 2>/dev/null ||
          die "module $m depends on $d, which is neither loaded before it nor built in" ;;
      esac
    done
    seen="$seen$m "
  done <"$tmp/modules.order"
fi
echo "$release" >"$tmp/release"
cp "$moddir/modules.builtin" "$tmp/modules.builtin" 2>/dev/null || true
cp "$tmp/root/boot/config-$release" "$tmp/config" 2>/dev/null ||
  cp "$moddir/config" "$tmp/config" 2>/dev/null || true
rm -rf "$tmp/root" "$kdir"
mv "$tmp" "$kdir"
echo "fetch-kernel: ready $release: $kdir/vmlinux, modules: $(tr '\n' ' ' <"$kdir/modules.order")"

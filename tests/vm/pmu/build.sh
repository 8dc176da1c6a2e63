#!/usr/bin/env bash
# Builds the emulated PMU kernel module (tierd_pmu_emu.c, GPL-2.0) for the kernel the rig boots by
# default: Debian's stock 7.3 of trixie-backports (tests/vm/fetch-kernel.sh). Prints the .ko's
# path on its last line: ${TIERD_VM_CACHE:-<repo>/build/vm}/pmu/out-KEY/tierd_pmu_emu.ko.
#
# Debian's linux-headers package for 7.3 needs newer host tools than Debian 12 has (its kbuild
# package is built with gcc 14), so the module is built against Debian's own source instead:
#   1. tests/vm/fetch-kernel.sh 7.3: the stock image (its release) and the private apt config of
#      trixie-backports in ${TIERD_VM_CACHE}/apt-trixie-backports
#   2. kernel-patches/build --source: the pristine linux-source-7.3 (the version pinned in
#      kernel-patches/7.3/source), unpacked read-only in ${TIERD_KERNEL_CACHE}
#   3. apt-get download linux-headers-RELEASE (the image's version; never installed): its .config
#      (Debian's build configuration: the image's /boot config plus the four signing and salt
#      lines Debian strips from it, checked here) and Module.symvers. The -common package holds
#      only headers the source already has.
#   4. make olddefconfig on that .config, in a kbuild folder of our own (O=, the source stays
#      pristine). Debian 12's gcc 12 and pahole 1.24 (package dwarves, scripts/install-deps; without
#      pahole BTF goes, and with it SCHED_CLASS_EXT, which changes task_struct) change only options
#      that say what the toolchain can do, and Rust (no bindgen here); any other change fails the
#      build (list in kbuild-KEY/config.diff)
#   5. make KERNELRELEASE=RELEASE modules_prepare, then Module.symvers copied in
#   6. make M=... modules; the .ko's vermagic must equal a stock module's
# Times on this machine (2 shared cores, nice 10, load ~1): steps 1-2 cached 0 s (a cold
# kernel-patches/build --source: download 150 MB, unpack ~1 min), 3: under 1 s, 4: 10-20 s,
# 5: 94 s, 6: 4-8 s. Steps 4-5 are cached per kbuild key (source version, .config, gcc and pahole
# versions, this script), step 6 per module key (kbuild key, module source).
# Fails loudly (non-zero, reason on stderr) when anything is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=scripts/lib/private-apt.sh
. "$repo/scripts/lib/private-apt.sh"
vmcache="${TIERD_VM_CACHE:-$repo/build/vm}"
cache="$vmcache/pmu"
jobs="${TIERD_KERNEL_JOBS:-2}"

die() {
  echo "pmu-build: ERROR: $*" >&2
  exit 1
}
say() {
  echo "pmu-build: $*" >&2
}

for tool in make gcc pahole dpkg-deb apt-get sha256sum modinfo; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps; pahole is in dwarves)"
done

# --- 1, 2: the stock kernel and the pristine source ---------------------------------------------
"$repo/tests/vm/fetch-kernel.sh" 7.3 >&2 || die "cannot fetch the stock 7.3 kernel (see above)"
kdir="$vmcache/kernel-7.3"
release="$(cat "$kdir/release")"
src="$("$repo/kernel-patches/build" --source | tail -n1)" || die "cannot fetch the kernel source (see above)"
[ -r "$src/Makefile" ] || die "kernel-patches/build --source gave '$src', not a kernel tree"

# --- 3: Debian's build .config and Module.symvers ------------------------------------------------
aptdir="$vmcache/apt-trixie-backports"
hpkg="linux-headers-$release"
image_deb="$(find "$aptdir/debs" -name "linux-image-${release}_*.deb" 2>/dev/null | head -n1)"
[ -n "$image_deb" ] || die "no linux-image-${release}_*.deb in $aptdir/debs (remove $kdir and rerun)"
version="$(dpkg-deb -f "$image_deb" Version)"
hdeb="$(find "$aptdir/debs" -name "${hpkg}_*.deb" | head -n1)"
if [ -z "$hdeb" ]; then
  read -r mirror keyring <<<"$(private_apt_main_mirror)"
  private_apt_init "$aptdir" "deb [signed-by=$keyring] $mirror trixie-backports main"
  private_apt_update "$aptdir" trixie-backports
  if ! (cd "$aptdir/debs" && apt-get -q "${private_apt_opts[@]}" download "$hpkg=$version") >"$aptdir/download.log" 2>&1; then
    cat "$aptdir/download.log" >&2
    die "apt-get download $hpkg=$version failed - see above"
  fi
  hdeb="$(find "$aptdir/debs" -name "${hpkg}_*.deb" | head -n1)"
  [ -n "$hdeb" ] || die "apt-get download reported success but no ${hpkg}_*.deb in $aptdir/debs"
fi
[ "$(dpkg-deb -f "$hdeb" Version)" = "$version" ] || die "$hdeb is not version $version of the image"
mkdir -p "$cache"
hdir="$cache/headers-$version"
if [ ! -s "$hdir/Module.symvers" ]; then
  rm -rf "$hdir.tmp"
  mkdir -p "$hdir.tmp"
  dpkg-deb --fsys-tarfile "$hdeb" | tar -x -C "$hdir.tmp" "./usr/src/$hpkg/.config" "./usr/src/$hpkg/Module.symvers" ||
    die "no .config and Module.symvers in $hdeb"
  mv "$hdir.tmp/usr/src/$hpkg/.config" "$hdir.tmp/config"
  mv "$hdir.tmp/usr/src/$hpkg/Module.symvers" "$hdir.tmp/Module.symvers"
  rm -rf "$hdir.tmp/usr" "$hdir"
  mv "$hdir.tmp" "$hdir"
fi
# The image's config is the build config less these lines; anything else means another kernel.
stripped='^CONFIG_(BUILD_SALT|MODULE_SIG_ALL|MODULE_SIG_KEY|SYSTEM_TRUSTED_KEYS)='
if ! diff -q <(grep -Ev "$stripped" "$hdir/config") <(grep -Ev "$stripped" "$kdir/config") >/dev/null; then
  die "$hpkg's .config is not the config of the image in $kdir"
fi

# --- 4, 5: configure and prepare a kbuild folder -------------------------------------------------
kkey="$({
  echo "source $src"
  cat "$hdir/config" "${BASH_SOURCE[0]}"
  gcc --version | head -n1
  pahole --version
} | sha256sum | cut -c1-16)"
kb="$cache/kbuild-$kkey"
make_args=(-C "$src" O="$kb" ARCH=x86_64 KERNELRELEASE="$release")
if [ ! -e "$kb/.tierd-prepared" ]; then
  rm -rf "$kb"
  mkdir -p "$kb"
  cp "$hdir/config" "$kb/.config"
  start=$SECONDS
  make -s "${make_args[@]}" olddefconfig >"$kb/config.log" 2>&1 || { cat "$kb/config.log" >&2; die "make olddefconfig failed"; }
  say "olddefconfig in $((SECONDS - start)) s"
  # Options that only say what the toolchain can do (versions, compiler features, Rust and what
  # depends on it, zstd debug sections, ML-DSA module signing keys): they change code generation,
  # not a structure a module shares with the kernel.
  toolchain='^CONFIG_(CC_|GCC_|AS_VERSION|LD_VERSION|PAHOLE_VERSION|RUST|RUSTC_|BINDGEN_|X86_NATIVE_CPU$|DEBUG_INFO_COMPRESSED_ZSTD$|OPENSSL_SUPPORTS_ML_DSA$|MODULE_SIG_KEY_TYPE_MLDSA_|DRM_PANIC_SCREEN_QR_|NOVA_CORE$|AMCC_QT2025_PHY$|AX88796B_RUST_PHY$|ANDROID_BINDER_IPC_RUST$|BLK_DEV_RUST_NULL$|FIND_BIT_BENCHMARK_RUST$)'
  diff <(grep -E '^(# )?CONFIG_' "$hdir/config" | sort) <(grep -E '^(# )?CONFIG_' "$kb/.config" | sort) | grep '^[<>]' >"$kb/config.diff" || true
  bad="$(sed -E 's/^[<>] (# )?(CONFIG_[A-Za-z0-9_]+).*/\2/' "$kb/config.diff" | sort -u | grep -Ev "$toolchain" || true)"
  [ -z "$bad" ] || die "olddefconfig changed options that are not the toolchain's ($kb/config.diff): ${bad//$'\n'/ }"
  for opt in CONFIG_DEBUG_INFO_BTF=y CONFIG_SCHED_CLASS_EXT=y; do
    grep -qx "$opt" "$kb/.config" || die "$opt lost by olddefconfig (is pahole installed?)"
  done
  start=$SECONDS
  make -s "${make_args[@]}" -j"$jobs" modules_prepare >"$kb/prepare.log" 2>&1 ||
    { tail -n 40 "$kb/prepare.log" >&2; die "make modules_prepare failed (log $kb/prepare.log)"; }
  cp "$hdir/Module.symvers" "$kb/Module.symvers"
  say "modules_prepare in $((SECONDS - start)) s"
  touch "$kb/.tierd-prepared"
fi

# --- 6: the module -------------------------------------------------------------------------------
mkey="$(cat "$here/tierd_pmu_emu.c" "$here/pmu_shm.h" "$here/Kbuild" <(echo "$kkey") | sha256sum | cut -c1-16)"
out="$cache/out-$mkey"
if [ ! -s "$out/tierd_pmu_emu.ko" ]; then
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  cp "$here/tierd_pmu_emu.c" "$here/pmu_shm.h" "$here/Kbuild" "$out.tmp/"
  start=$SECONDS
  make "${make_args[@]}" M="$out.tmp" modules >"$out.tmp/build.log" 2>&1 ||
    { cat "$out.tmp/build.log" >&2; die "building tierd_pmu_emu.ko failed"; }
  say "module built in $((SECONDS - start)) s"
  stock_ko="$(find "$kdir/modules" -name '*.ko' | head -n1)"
  want="$(modinfo -F vermagic "$stock_ko")"
  got="$(modinfo -F vermagic "$out.tmp/tierd_pmu_emu.ko")"
  [ "$got" = "$want" ] || die "vermagic '$got' is not the stock kernel's '$want'"
  rm -rf "$out"
  mv "$out.tmp" "$out"
fi
echo "$out/tierd_pmu_emu.ko"

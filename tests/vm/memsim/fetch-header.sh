#!/usr/bin/env bash
# Fetches QEMU's TCG plugin API header (include/qemu/qemu-plugin.h) from Debian's source package
# of the INSTALLED qemu-system-x86, without touching the machine's apt state. Never vendored.
#
# What it does, all under ${TIERD_VM_CACHE:-<repo>/build/vm}/memsim/:
#   1. reads the installed binary package's source name and version (dpkg-query ${source:Version},
#      e.g. qemu 1:7.2+dfsg-7+deb12u18: a binNMU "+bN" suffix is not part of the source version);
#   2. writes a PRIVATE apt configuration with deb-src entries for bookworm, bookworm-updates and
#      bookworm-security (mirror URIs and keyring taken from the machine's debian.sources;
#      scripts/lib/private-apt.sh, as tests/vm/fetch-kernel.sh does) and runs `apt-get update` and
#      `apt-get source --download-only qemu=VERSION` with it (dpkg-dev; the .dsc is verified);
#   3. unpacks ONLY include/qemu/qemu-plugin.h from the upstream tarball, and fails when one of
#      Debian's patches touches it (the header would then differ from the one QEMU was built with).
# Result: memsim/include/qemu-plugin.h and memsim/include/source-version (the source version it
# came from). Idempotent: a cached header of the installed version is reused. Fails loudly
# (non-zero, reason on stderr) when anything cannot be fetched.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=scripts/lib/private-apt.sh
. "$repo/scripts/lib/private-apt.sh"
cache="${TIERD_VM_CACHE:-$repo/build/vm}/memsim"
inc="$cache/include"

die() {
  echo "memsim-header: ERROR: $*" >&2
  exit 1
}

for tool in dpkg-query apt-get tar dpkg-source; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps)"
done
read -r src_pkg src_ver < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' qemu-system-x86 2>/dev/null) ||
  die "qemu-system-x86 is not installed (run scripts/install-deps)"
[ -n "${src_ver:-}" ] || die "cannot read the source version of qemu-system-x86"

if [ -s "$inc/qemu-plugin.h" ] && [ "$(cat "$inc/source-version" 2>/dev/null)" = "$src_pkg $src_ver" ]; then
  echo "memsim-header: cached qemu-plugin.h of $src_pkg $src_ver"
  exit 0
fi

# --- private apt configuration with deb-src entries (scripts/lib/private-apt.sh) ---------------
lines=()
while read -r uri key suites; do
  [ "$key" != "-" ] || key="$private_apt_default_keyring"
  [ -r "$key" ] || die "keyring $key not readable (package debian-archive-keyring)"
  for s in $suites; do
    case "$s" in
      bookworm | bookworm-updates | bookworm-security) lines+=("deb-src [signed-by=$key] $uri $s main") ;;
    esac
  done
done < <(private_apt_entries)
[ ${#lines[@]} -gt 0 ] || die "no bookworm suite in the machine's apt sources"
aptdir="$cache/apt"
mkdir -p "$aptdir/src"
private_apt_init "$aptdir" "${lines[@]}"
apt_opts=("${private_apt_opts[@]}")

dsc="$(find "$aptdir/src" -maxdepth 1 -name "${src_pkg}_${src_ver#*:}.dsc" | head -n1)"
if [ -z "$dsc" ]; then
  echo "memsim-header: private apt update (deb-src, lists in $aptdir)"
  private_apt_update "$aptdir" "the deb-src entries"
  echo "memsim-header: apt-get source --download-only $src_pkg=$src_ver"
  if ! (cd "$aptdir/src" && apt-get -q "${apt_opts[@]}" source --download-only "$src_pkg=$src_ver") >"$aptdir/source.log" 2>&1; then
    cat "$aptdir/source.log" >&2
    die "apt-get source $src_pkg=$src_ver failed (is this version still in bookworm's suites?) - see above"
  fi
  dsc="$(find "$aptdir/src" -maxdepth 1 -name "${src_pkg}_${src_ver#*:}.dsc" | head -n1)"
  [ -n "$dsc" ] || die "apt-get source reported success but no ${src_pkg}_${src_ver#*:}.dsc in $aptdir/src"
fi

# --- unpack only the header ----------------------------------------------------------------------
upstream="${src_ver#*:}"
upstream="${upstream%-*}"
orig="$(find "$aptdir/src" -maxdepth 1 -name "${src_pkg}_${upstream}.orig.tar.*" | head -n1)"
[ -n "$orig" ] || die "no ${src_pkg}_${upstream}.orig.tar.* next to $dsc"
deb_tar="$(find "$aptdir/src" -maxdepth 1 -name "${src_pkg}_${src_ver#*:}.debian.tar.*" | head -n1)"
[ -n "$deb_tar" ] || die "no ${src_pkg}_${src_ver#*:}.debian.tar.* next to $dsc"
tmp="$cache/include.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/x"
tar -xf "$orig" -C "$tmp/x" --wildcards '*/include/qemu/qemu-plugin.h' ||
  die "include/qemu/qemu-plugin.h not found in $orig"
hdr="$(find "$tmp/x" -path '*/include/qemu/qemu-plugin.h' | head -n1)"
[ -s "$hdr" ] || die "include/qemu/qemu-plugin.h not found in $orig"
# Debian's patches must leave the header alone, or the unpatched copy would not be the API QEMU has.
mkdir -p "$tmp/deb"
tar -xf "$deb_tar" -C "$tmp/deb" --wildcards 'debian/patches/*' 2>/dev/null || true
if grep -rlE '^\+\+\+ [^ ]*include/qemu/qemu-plugin\.h' "$tmp/deb" >"$tmp/patches" 2>/dev/null; then
  die "Debian patches change include/qemu/qemu-plugin.h ($(tr '\n' ' ' <"$tmp/patches")); apply them here first"
fi
mkdir -p "$tmp/out"
cp "$hdr" "$tmp/out/qemu-plugin.h"
echo "$src_pkg $src_ver" >"$tmp/out/source-version"
rm -rf "$inc"
mv "$tmp/out" "$inc"
rm -rf "$tmp"
echo "memsim-header: qemu-plugin.h of $src_pkg $src_ver in $inc"

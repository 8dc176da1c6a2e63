#!/usr/bin/env bash
# Builds GAPBS's `pr`, `bc` and `converter` for the rig's gapbs and bench-gapbs scenarios,
# unmodified (bench-gapbs writes its graph once to a file with `converter`).
# GAPBS (github.com/sbeamer/gapbs, BSD-3-Clause) is not packaged by Debian and not vendored here;
# its copyright and license notice, which applies to every GAPBS binary this builds, is kept in
# tests/vm/GAPBS-LICENSE.
# Sources, first found wins:
#   1. $TIERD_GAPBS_DIR: a GAPBS checkout (Makefile and src/pr.cc); built there with `make pr bc
#      converter` unless the three binaries are already newer than its sources;
#   2. a gapbs-*.tar.gz in $gapbs_beside, a folder beside the checkout (below; a `git archive`
#      with top folder gapbs/):
#      unpacked and built under ${TIERD_VM_CACHE:-<repo>/build/vm}/gapbs-HASH/, HASH = the first
#      12 hex digits of the tarball's sha256 (so a new tarball builds afresh).
# Prints the folder holding `pr`, `bc` and `converter` on stdout (progress on stderr). Exit
# status: 0 built or cached; 3 when neither source exists (the scenario then says it was not run);
# 1 when a source exists but does not build (a failure, never a skip).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${TIERD_VM_CACHE:-$repo/build/vm}"

die() {
  echo "build-gapbs: ERROR: $*" >&2
  exit 1
}

# built DIR: whether DIR holds the three programs, executable.
built() {
  [ -x "$1/pr" ] && [ -x "$1/bc" ] && [ -x "$1/converter" ]
}

# build DIR: `make pr bc converter` in DIR (g++ with OpenMP, from build-essential), quietly
# unless it fails.
build() {
  command -v make >/dev/null || die "'make' not found (run scripts/install-deps)"
  command -v g++ >/dev/null || die "'g++' not found (run scripts/install-deps)"
  if ! make -C "$1" -j2 pr bc converter >"$1/build.log" 2>&1; then
    cat "$1/build.log" >&2
    die "make pr bc converter failed in $1 - see above"
  fi
  if ! built "$1"; then
    die "make pr bc converter left no pr/bc/converter in $1"
  fi
}

if [ -n "${TIERD_GAPBS_DIR:-}" ]; then
  dir="$(cd "$TIERD_GAPBS_DIR" && pwd)" || die "TIERD_GAPBS_DIR=$TIERD_GAPBS_DIR is not a folder"
  if [ ! -r "$dir/Makefile" ] || [ ! -r "$dir/src/pr.cc" ]; then
    die "TIERD_GAPBS_DIR=$dir is not a GAPBS checkout (no Makefile, src/pr.cc)"
  fi
  if built "$dir" && [ -z "$(find "$dir/src" -newer "$dir/pr" -o -newer "$dir/bc" -o -newer "$dir/converter" | head -n1)" ]; then
    echo "build-gapbs: cached pr, bc, converter in $dir" >&2
  else
    echo "build-gapbs: make pr bc converter in $dir" >&2
    build "$dir"
  fi
  echo "$dir"
  exit 0
fi

# Where a build machine keeps third-party sources beside the checkout; not part of the repository.
gapbs_beside="$repo/../shared/third_party/gapbs"
tarball="$(find "$gapbs_beside" -maxdepth 1 -name 'gapbs-*.tar.gz' 2>/dev/null | sort | head -n1)" || true
if [ -z "$tarball" ]; then
  echo "build-gapbs: no GAPBS: TIERD_GAPBS_DIR unset and no $gapbs_beside/gapbs-*.tar.gz" >&2
  exit 3
fi
hash="$(sha256sum "$tarball" | cut -c1-12)"
out="$cache/gapbs-$hash"
# A cache built before converter was added lacks it: it is rebuilt below.
if built "$out/gapbs"; then
  echo "build-gapbs: cached pr, bc, converter in $out/gapbs" >&2
  echo "$out/gapbs"
  exit 0
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
echo "build-gapbs: unpacking $(basename "$tarball") and building pr, bc, converter" >&2
tar -xzf "$tarball" -C "$out.tmp" || die "cannot unpack $tarball"
[ -r "$out.tmp/gapbs/src/pr.cc" ] || die "$tarball has no gapbs/src/pr.cc"
build "$out.tmp/gapbs"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "build-gapbs: ready $out/gapbs/pr, $out/gapbs/bc, $out/gapbs/converter" >&2
echo "$out/gapbs"

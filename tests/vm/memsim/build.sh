#!/usr/bin/env bash
# Builds the memsim TCG plugin (memsim.c) against the qemu-plugin.h of the installed QEMU's Debian
# source package (fetch-header.sh; never vendored). Output:
# ${TIERD_VM_CACHE:-<repo>/build/vm}/memsim/memsim.so, rebuilt when memsim.c, this script or the
# header changed. Called by tests/vm/run.sh for scenarios with "# rig: memsim=count|cost".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${TIERD_VM_CACHE:-$repo/build/vm}/memsim"
out="$cache/memsim.so"

die() {
  echo "memsim-build: ERROR: $*" >&2
  exit 1
}

"$here/fetch-header.sh" || die "cannot fetch qemu-plugin.h (see above)"
cc="${CC:-cc}"
command -v "$cc" >/dev/null || die "no C compiler '$cc' (package gcc; run scripts/install-deps)"
stamp="$(cat "$here/memsim.c" "$here/../pmu/pmu_shm.h" "${BASH_SOURCE[0]}" "$cache/include/qemu-plugin.h" "$cache/include/source-version" | sha256sum | cut -d' ' -f1)"
if [ -s "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "memsim-build: cached $out"
  exit 0
fi
"$cc" -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
  -I"$cache/include" -I"$here/../pmu" -o "$out.tmp" "$here/memsim.c" -lpthread || die "compiling $here/memsim.c failed"
mv "$out.tmp" "$out"
echo "$stamp" >"$out.stamp"
echo "memsim-build: built $out against qemu-plugin.h of $(cat "$cache/include/source-version")"

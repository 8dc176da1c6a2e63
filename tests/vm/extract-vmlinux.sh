#!/usr/bin/env bash
# Extracts the uncompressed ELF vmlinux from a bzImage: QEMU's PVH boot (-kernel with an ELF that
# has a PVH note) needs the ELF, and booting it skips the slow in-guest decompression under TCG.
# Same idea as the kernel's scripts/extract-vmlinux (written anew here): find each compression
# magic in the image, decompress from that offset, keep the first result that is an ELF.
# Usage: extract-vmlinux.sh BZIMAGE OUT
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BZIMAGE OUT" >&2; exit 2; }
img="$1"
out="$2"
tmp="$out.part"
trap 'rm -f "$tmp"' EXIT

is_elf() {
  [ "$(head -c4 "$1" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]
}

# name  grep -P byte pattern  decompressor (reads stdin, writes stdout)
try() {
  local name="$1" pattern="$2"
  shift 2
  command -v "$1" >/dev/null || return 1
  local pos
  while read -r pos; do
    # Trailing data after the stream makes some decompressors complain: judge by the output.
    tail -c "+$((pos + 1))" "$img" | "$@" >"$tmp" 2>/dev/null || true
    if [ -s "$tmp" ] && is_elf "$tmp"; then
      mv "$tmp" "$out"
      echo "extract-vmlinux: $name payload at offset $pos -> $out ($(stat -c %s "$out") bytes)"
      return 0
    fi
  done < <(LC_ALL=C grep -obUaP "$pattern" "$img" | cut -d: -f1)
  return 1
}

if is_elf "$img"; then
  cp "$img" "$out"
  exit 0
fi
try zstd '\x28\xb5\x2f\xfd' zstd -dcq && exit 0
try xz '\xfd\x37\x7a\x58\x5a\x00' xz -dcq && exit 0
try gzip '\x1f\x8b\x08' gzip -dcq && exit 0
try bzip2 'BZh' bzip2 -dcq && exit 0
try lzma '\x5d\x00\x00\x00' xz -dcq --format=lzma && exit 0
try lz4 '\x02\x21\x4c\x18' lz4 -dcq && exit 0
echo "extract-vmlinux: no known compressed ELF payload found in $img" >&2
exit 1

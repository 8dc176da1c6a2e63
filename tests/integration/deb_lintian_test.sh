#!/usr/bin/env bash
# Builds the .deb from an already built tree with cpack into a temp dir (the build dir is left
# alone) and runs Debian's lintian on it: any error or warning fails (the package's own overrides,
# packaging/lintian-overrides, apply; none is added here), and the info tags are shown. Also checks what lintian cannot know: the package's version is
# the top entry of packaging/changelog, and the installed changelog is that file.
# Never installs the package. Exit 77 (skipped) when lintian or dpkg-deb is missing.
# Usage: deb_lintian_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
command -v lintian >/dev/null || { echo "SKIP: lintian not installed (scripts/install-deps)"; exit 77; }
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpack --config "$build/CPackConfig.cmake" -B "$tmp" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/tierd_*.deb)
echo "== $(basename "$deb")"
fail=0

version=$(dpkg-deb -f "$deb" Version)
top=$(sed -n '1s/^tierd (\([^)]*\)).*/\1/p' "$src/packaging/changelog")
if [ "$version" = "$top" ]; then echo "ok: version $version is packaging/changelog's top entry"
else echo "FAIL: package version $version, packaging/changelog's top entry '$top'"; fail=1; fi
dpkg-deb -x "$deb" "$tmp/root"
if zcat "$tmp/root/usr/share/doc/tierd/changelog.Debian.gz" | cmp -s - "$src/packaging/changelog"; then
  echo "ok: changelog.Debian.gz is packaging/changelog"
else echo "FAIL: /usr/share/doc/tierd/changelog.Debian.gz differs from packaging/changelog"; fail=1; fi

# Errors and warnings fail; info tags are printed for the reader.
set +e
lintian --no-cfg --display-info --fail-on error,warning "$deb" >"$tmp/lintian.txt" 2>&1
rc=$?
set -e
cat "$tmp/lintian.txt"
if [ $rc -ne 0 ]; then
  echo "FAIL: lintian exit $rc: $(grep -cE '^[EW]: ' "$tmp/lintian.txt") errors and warnings"; fail=1
else
  echo "ok: lintian: no errors or warnings ($(grep -cE '^I: ' "$tmp/lintian.txt") info tags)"
fi
# The manual pages are installed (lintian's no-manual-page covers the binaries only).
for page in usr/share/man/man8/tierd.8.gz usr/share/man/man8/tierctl.8.gz usr/share/man/man5/tierd.toml.5.gz; do
  if zcat "$tmp/root/$page" | cmp -s - "$src/docs/man/$(basename "$page" .gz)"; then echo "ok: /$page"
  else echo "FAIL: /$page missing or not docs/man/$(basename "$page" .gz)"; fail=1; fi
done
exit $fail

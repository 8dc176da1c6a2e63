#!/usr/bin/env bash
# Builds the .deb from an already built tree with cpack into a temp dir (the build dir is left
# alone) and checks with dpkg-deb that it holds the binaries, the unit, the default config as a
# conffile (when config/tierd.toml exists), the dashboards and the docs (not the benchmark tables).
# Never installs it.
# Usage: deb_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpack --config "$build/CPackConfig.cmake" -B "$tmp" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/tierd_*.deb)
echo "== $(basename "$deb")"
dpkg-deb -c "$deb" | awk '{print $1, $6}' | tee "$tmp/contents"
fail=0
need() {
  if grep -qE " \\./$1\$" "$tmp/contents"; then echo "ok: /$1"; else echo "MISSING: /$1"; fail=1; fi
}
need 'usr/bin/tierd'
need 'usr/bin/tierctl'
need 'lib/systemd/system/tierd.service'
need 'usr/share/tierd/dashboards/tierd-overview.json'
need 'usr/share/tierd/dashboards/tierd-workload.json'
need 'usr/share/tierd/grafana/provisioning/dashboards/tierd.yaml'
need 'usr/share/tierd/grafana/provisioning/datasources/tierd-prometheus.yaml'
need 'usr/share/doc/tierd/README.md'
need 'usr/share/doc/tierd/metrics.md'
need 'usr/share/doc/tierd/service.md'
# The rig's benchmark tables and plots are not product documentation.
if grep -qE ' \./usr/share/doc/tierd/(benchmarks\.md|bench/)' "$tmp/contents"; then
  echo "UNWANTED: benchmark tables or plots under /usr/share/doc/tierd"; fail=1
fi
grep -qE '^-rwxr-xr-x \./usr/bin/tierd$' "$tmp/contents" || { echo "tierd is not 0755"; fail=1; }
dpkg-deb -e "$deb" "$tmp/control"
if [ -f "$src/config/tierd.toml" ]; then
  need 'etc/tierd/tierd.toml'
  if grep -qx '/etc/tierd/tierd.toml' "$tmp/control/conffiles"; then echo "ok: conffile /etc/tierd/tierd.toml"
  else echo "MISSING: /etc/tierd/tierd.toml in conffiles"; fail=1; fi
else
  echo "note: config/tierd.toml does not exist yet; the package carries no default config"
fi
for p in "$src"/config/profiles/*.toml; do
  [ -f "$p" ] || continue
  need "etc/tierd/profiles/$(basename "$p")"
  grep -qx "/etc/tierd/profiles/$(basename "$p")" "$tmp/control/conffiles" || {
    echo "MISSING: /etc/tierd/profiles/$(basename "$p") in conffiles"; fail=1; }
done
for s in postinst prerm postrm; do [ -x "$tmp/control/$s" ] || { echo "MISSING: $s"; fail=1; }; done
grep -E '^(Package|Version|Depends):' "$tmp/control/control"
exit $fail

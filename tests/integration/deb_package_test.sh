#!/usr/bin/env bash
# Builds the .deb from an already built tree with cpack into a temp dir (the build dir is left
# alone) and checks with dpkg-deb that it holds the binaries, the unit, the default config as a
# conffile (when config/tierd.toml exists), the dashboards, the alerting rules, the docs (not the benchmark tables),
# Debian's copyright and changelog, and maintainer scripts that use Debian's systemd helpers.
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
need 'usr/share/tierd/alerts/tierd.rules.yml'
need 'usr/share/tierd/grafana/provisioning/datasources/tierd-prometheus.yaml'
need 'usr/share/doc/tierd/README.md'
need 'usr/share/doc/tierd/metrics.md'
need 'usr/share/doc/tierd/service.md'
need 'usr/share/doc/tierd/copyright'
need 'usr/share/doc/tierd/changelog.Debian.gz'
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
# systemd through Debian's helpers (as dh_installsystemd writes them): systemctl only for
# daemon-reload; never enabled or started by installing.
if grep -hE '^[^#]*systemctl' "$tmp/control/postinst" "$tmp/control/prerm" "$tmp/control/postrm" |
  grep -vq 'daemon-reload'; then
  echo "UNWANTED: a maintainer script calls systemctl for more than daemon-reload"; fail=1
fi
grep -q 'deb-systemd-helper update-state' "$tmp/control/postinst" || { echo "MISSING: deb-systemd-helper in postinst"; fail=1; }
grep -q 'deb-systemd-invoke stop' "$tmp/control/prerm" || { echo "MISSING: deb-systemd-invoke in prerm"; fail=1; }
if grep -qE 'deb-systemd-invoke (start|restart)|deb-systemd-helper enable' "$tmp/control/postinst" &&
  ! grep -q 'was-enabled' "$tmp/control/postinst"; then
  echo "UNWANTED: postinst enables or starts tierd on installation"; fail=1
fi
grep -E '^(Package|Version|Depends):' "$tmp/control/control"
exit $fail

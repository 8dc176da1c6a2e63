#!/usr/bin/env bash
# Checks config/tierd.service:
#   0. its IP allow list is localhost only, and it and docs/service.md say so and how tierd
#      guards a wider one (a non-loopback metrics_listen needs basic auth or an explicit key);
#   with systemd's own tools:
#   1. `systemd-analyze verify` passes with no warnings (run on a temp copy whose ExecStart points
#      at the built tierd, since the installed path /usr/bin/tierd need not exist here);
#   2. `systemd-analyze security --offline` exposure stays at or below the recorded score
#      (docs/service.md), so hardening cannot silently regress.
# Usage: service_unit_test.sh UNIT_FILE TIERD_BINARY MAX_EXPOSURE_TIMES_10
# Exit 77 (skipped) when systemd-analyze is absent.
set -euo pipefail
unit=$1 tierd=$2 max=$3

# The exporter's network exposure: the unit allows loopback only, and the unit and
# docs/service.md state the same allow list and how tierd guards a wider one.
docs=$(dirname "$unit")/../docs/service.md
echo "== IP allow list: the unit and docs/service.md agree"
allow=$(sed -n 's/^IPAddressAllow=//p' "$unit")
if ! grep -qx 'IPAddressDeny=any' "$unit" || [ "$allow" != localhost ]; then
  echo "FAIL: the unit must deny any address and allow localhost only (got '$allow')"
  exit 1
fi
grep -qF "\`IPAddressAllow=$allow\`" "$docs" ||
  { echo "FAIL: docs/service.md does not state IPAddressAllow=$allow"; exit 1; }
for f in "$unit" "$docs"; do
  grep -q 'metrics_allow_unauthenticated_remote' "$f" ||
    { echo "FAIL: $f does not say that a non-loopback metrics_listen needs basic auth"; exit 1; }
done
echo "ok: localhost only, documented"

command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
[ -x "$tierd" ] || { echo "FAIL: $tierd is not an executable"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -q '^ExecStart=/usr/bin/tierd ' "$unit" || { echo "FAIL: ExecStart must run /usr/bin/tierd"; exit 1; }
sed "s#^ExecStart=/usr/bin/tierd #ExecStart=$tierd #" "$unit" > "$tmp/tierd.service"

echo "== systemd-analyze verify"
if ! out=$(systemd-analyze verify "$tmp/tierd.service" 2>&1); then
  echo "$out"; echo "FAIL: systemd-analyze verify"; exit 1
fi
if [ -n "$out" ]; then
  echo "$out"; echo "FAIL: systemd-analyze verify printed warnings"; exit 1
fi
echo "ok: no errors, no warnings"

echo "== systemd-analyze security --offline=yes (threshold $max/10)"
systemd-analyze security --offline=yes "$tmp/tierd.service" | tail -1
if ! systemd-analyze security --offline=yes --threshold="$max" "$tmp/tierd.service" >/dev/null 2>&1; then
  systemd-analyze security --offline=yes "$tmp/tierd.service" | grep '✗' || true
  echo "FAIL: exposure above $max/10; harden the unit or update docs/service.md on purpose"; exit 1
fi
echo "ok"

#!/usr/bin/env bash
# Checks the alerting rules shipped in alerts/ with Prometheus's own tool:
#   1. `promtool check rules` parses every rule;
#   2. `promtool test rules` fires each alert on the series it is for and holds it on a healthy
#      instance beside it (alerts/tierd.rules.test.yml);
#   3. every tierd_* metric a rule names is in tierd's catalog (`tierctl metrics --catalog`), and
#      every one it takes rate() of is a counter, so a renamed metric cannot leave a rule silent.
# Usage: alert_rules_test.sh ALERTS_DIR TIERCTL_BINARY
# Exit 77 (skipped) when promtool is absent (scripts/install-deps installs it: Debian's prometheus).
set -euo pipefail
dir=$1 tierctl=$2
command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
rules=$dir/tierd.rules.yml

echo "== promtool check rules"
promtool check rules "$rules"
echo "== promtool test rules"
(cd "$dir" && promtool test rules tierd.rules.test.yml)

echo "== every metric the rules name is in the catalog"
catalog=$("$tierctl" metrics --catalog)
fail=0
while read -r name; do
  type=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$catalog")
  if [ -z "$type" ]; then
    echo "FAIL: $rules names $name, which tierd does not export"
    fail=1
  fi
done < <(grep -v '^ *#' "$rules" | grep -o 'tierd_[a-z_]*' | sort -u)
while read -r name; do
  type=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$catalog")
  if [ "$type" != counter ]; then
    echo "FAIL: $rules takes rate() of $name, a ${type:-missing metric}, not a counter"
    fail=1
  fi
done < <(grep -v '^ *#' "$rules" | grep -o 'rate(tierd_[a-z_]*' | sed 's/^rate(//' | sort -u)
[ "$fail" = 0 ] || exit 1
echo "ok: $(grep -c '^ *- alert:' "$rules") alerts, each tested, every metric exported"

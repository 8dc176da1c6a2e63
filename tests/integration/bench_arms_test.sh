#!/bin/sh
# Every bench arm file (tests/vm/arms/NAME.toml) laid over every workload's rig config
# (tests/vm/config/tierd-WORKLOAD.toml) by tiering-lib.sh's tl_arm_config, as the bench scenarios
# do in the guest: each of the arm's lines lands in the copy, and `tierd --check-config` accepts
# the copy. A line that is not `[table]` or `key = value`, and an arm whose keys tierd rejects,
# fail. Usage: bench_arms_test.sh REPO TIERD
set -u
repo="$1"
tierd="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0

# What tiering-lib.sh needs from guest-lib.sh, for the host.
RIG_SRC="$repo"
RIG_OUT="$tmp/out"
mkdir -p "$RIG_OUT"
need_bin() { echo /bin/true; }
rig_param() { echo "$2"; }
check() {
  what="$1"
  shift
  if "$@"; then echo "ok - $what"; else
    echo "FAIL - $what"
    failed=1
  fi
}
fail() {
  echo "FAIL - $*"
  failed=1
}
# shellcheck source=tests/vm/tiering-lib.sh
. "$repo/tests/vm/tiering-lib.sh"

cp -r "$repo/config/profiles" "$tmp/"
n=0
for arm_file in "$repo"/tests/vm/arms/*.toml; do
  arm="$(basename "$arm_file" .toml)"
  check "$arm is an arm file" tl_arm_is_tierd "$arm"
  check "$arm passes tl_arm_check" tl_arm_check "$arm"
  echo "$arm: placement=$placement, tierd_args=$(tl_arm_setting "$arm" tierd_args)"
  for base in "$repo"/tests/vm/config/tierd-*.toml; do
    cp "$base" "$tmp/base.toml"
    tl_arm_config "$arm" "$tmp/base.toml" "$tmp/arm.toml" >/dev/null
    if "$tierd" --check-config --config "$tmp/arm.toml" >"$tmp/check.log" 2>&1; then
      echo "ok - $arm over $(basename "$base"): tierd --check-config accepts it"
    else
      fail "$arm over $(basename "$base"): tierd --check-config refuses it:"
      cat "$tmp/check.log"
    fi
    n=$((n + 1))
  done
done
check "arm files were found ($n arm x workload configs)" [ "$n" -gt 0 ]
not_arm() { ! tl_arm_is_tierd "$1"; }
check "kernel-nb2 (a scenario's own arm) is no arm file" not_arm kernel-nb2
check "kernel-nb2 is a known arm, placement slow" tl_arm_check kernel-nb2
ideal_placed() { tl_arm_check ideal && [ "$placement" = ideal ]; }
check "ideal is a known arm, placement ideal" ideal_placed
before=$failed
tl_arm_check no-such-arm
unknown_rc=$?
unknown_failed=$failed
failed=$before
check "an unknown arm fails and returns 1" [ "$unknown_rc" = 1 -a "$unknown_failed" = 1 ]
check "a path is no arm name" not_arm ../config/tierd-gups
check "ideal-tierd-dry's settings: placement=ideal, tierd_args=--dry-run" \
  [ "$(tl_arm_setting ideal-tierd-dry placement)/$(tl_arm_setting ideal-tierd-dry tierd_args)" = "ideal/--dry-run" ]

# A broken arm file: a line that is neither is reported (here in a copy of the arms folder).
mkdir -p "$tmp/arms"
printf '[daemon]\nsettled_interval "4s"\n' >"$tmp/arms/broken.toml"
# shellcheck disable=SC2034  # read by tiering-lib.sh's functions
tl_arms_dir="$tmp/arms"
before=$failed
tl_arm_config broken "$tmp/base.toml" "$tmp/broken.toml" >/dev/null
broken_failed=$failed
failed=$before
check "a line that is not 'key = value' fails the arm" [ "$broken_failed" = 1 ]
printf '# arm: placement=fast\n' >"$tmp/arms/badplace.toml"
before=$failed
tl_arm_check badplace
bad_failed=$failed
failed=$before
check "placement=fast fails the arm and counts as slow ($placement)" [ "$bad_failed" = 1 -a "$placement" = slow ]
exit "$failed"

# shellcheck shell=bash
# Private apt configurations: fetch Debian packages (binary or source) with apt-get without
# touching the machine's apt state (its sources, lists, cache, status, lock) and without
# installing anything. Sourced by tests/vm/fetch-kernel.sh, tests/vm/memsim/fetch-header.sh and
# kernel-patches/build.
#
# The caller defines die() (prints its reason and exits non-zero) before calling these.
#
#   private_apt_entries            prints one "URI KEYRING SUITE..." line per stanza of the
#                                  machine's /etc/apt/sources.list.d/debian.sources (KEYRING "-"
#                                  when the stanza has no Signed-By), or from the one-line
#                                  /etc/apt/sources.list when there is no deb822 file
#   private_apt_main_mirror        prints "URI KEYRING" of the machine's main Debian entry (the
#                                  one whose suites include plain "bookworm"); dies without one
#   private_apt_init DIR LINE...   writes DIR/sources.list with the given sources.list lines,
#                                  creates DIR's lists and cache, and sets the array
#                                  private_apt_opts (the -o options every apt-get and apt-cache
#                                  call must carry)
#   private_apt_update DIR WHAT    apt-get update with private_apt_opts; on failure, or on any
#                                  W:/E: line in its output, prints the log and dies (WHAT names
#                                  the suites in the message)
#
# Same mirror and keyring as the machine's own entries, so a private config uses exactly what the
# machine is allowed to use.

private_apt_sources=/etc/apt/sources.list.d/debian.sources
private_apt_default_keyring=/usr/share/keyrings/debian-archive-keyring.gpg

private_apt_entries() {
  local out=""
  if [ -r "$private_apt_sources" ]; then
    out="$(awk '
      function flush() { if (uri != "") print uri, (key == "" ? "-" : key), suites; uri = ""; key = ""; suites = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^URIs:/      { uri = $2 }
      /^Signed-By:/ { key = $2 }
      /^Suites:/    { suites = ""; for (i = 2; i <= NF; i++) suites = suites " " $i }
      END { flush() }' "$private_apt_sources")"
  fi
  if [ -z "$out" ] && [ -r /etc/apt/sources.list ]; then
    out="$(awk '$1 == "deb" && $3 ~ /^bookworm/ { print $2, "-", $3 }' /etc/apt/sources.list)"
  fi
  [ -z "$out" ] || echo "$out"
}

private_apt_main_mirror() {
  local uri key suites s
  while read -r uri key suites; do
    for s in $suites; do
      if [ "$s" = bookworm ]; then
        [ "$key" != "-" ] || key="$private_apt_default_keyring"
        [ -r "$key" ] || die "keyring $key not readable (package debian-archive-keyring)"
        echo "$uri $key"
        return 0
      fi
    done
  done < <(private_apt_entries)
  die "cannot find the Debian mirror URI (suite bookworm) in $private_apt_sources or /etc/apt/sources.list"
}

private_apt_init() {
  local dir="$1" line
  shift
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  : >"$dir/sources.list"
  for line in "$@"; do echo "$line" >>"$dir/sources.list"; done
  [ -s "$dir/sources.list" ] || die "private apt config in $dir: no sources"
  private_apt_opts=(
    -o "Dir::Etc::SourceList=$dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$dir/lists"
    -o "Dir::Cache=$dir/cache"
    -o "Dir::State::status=/dev/null"
    -o "APT::Get::List-Cleanup=0"
    -o "Debug::NoLocking=1"
  )
  # As root, apt downloads as the unprivileged user _apt (it hands the partial/ folders to it); a
  # cache under a private home (/root is mode 700) is out of its reach and apt warns on every
  # download. Only then download as root, which is what apt falls back to anyway, without the
  # warning that private_apt_update treats as an error.
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1 &&
    ! runuser -u _apt -- test -x "$dir" 2>/dev/null; then
    private_apt_opts+=(-o "APT::Sandbox::User=root")
  fi
}

private_apt_update() {
  local dir="$1" what="$2"
  if ! apt-get -q "${private_apt_opts[@]}" update >"$dir/update.log" 2>&1; then
    cat "$dir/update.log" >&2
    die "apt-get update of $what failed (network? mirror?) - see above"
  fi
  if grep -qE '^(W|E): ' "$dir/update.log"; then
    cat "$dir/update.log" >&2
    die "apt-get update of $what reported errors - see above"
  fi
}

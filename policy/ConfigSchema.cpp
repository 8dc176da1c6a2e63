#include "policy/ConfigSchema.h"

#include <cstdio>
#include <sstream>

#include "policy/ConfigUnits.h"

namespace tierd::policy {
namespace {

constexpr double kMs = 1e6;  // ns per millisecond
constexpr double kS = 1e9;   // ns per second

// [daemon]: the tick, the metrics endpoint, dry-run.
std::vector<KeySpec> daemonKeys() {
  return {
      {"daemon", "interval", ValueType::Duration, "\"1s\"", 10 * kMs, 3600 * kS, "", false, false,
       "", "Tick interval: how often tierd drains samples, decides and migrates."},
      {"daemon", "settled_interval", ValueType::Duration, "\"0s\"", 0, 3600 * kS, "", false, false,
       "",
       "Tick interval while placement is settled (the last 10 ticks' plans moved at most "
       "sampling.settle_trickle_percent of the hot bytes, no process entered or left a scope): "
       "the daemon then waits this long after a tick instead of `interval`, so a settled "
       "workload costs the daemon's reads and parsing (scope, smaps, numa_maps, sampling) that "
       "much less often. DAMON's per-tick access rates are counted as that many regular ticks "
       "(heat and thresholds unchanged); PMU samples accumulate. The first tick that is not "
       "settled returns to `interval`. A change (a new hot set, a new process, a shift) is seen "
       "up to this much later, and a reload or stop signal ends the wait at once (`tierctl "
       "simulate` ticks at `interval` throughout). \"0s\": "
       "always `interval`; else at least `interval`."},
      {"daemon", "metrics_listen", ValueType::Address, "\"127.0.0.1:9464\"", 0, 0, "", false, false,
       "", "Address of the Prometheus /metrics endpoint; \"\" disables it."},
      {"daemon", "metrics_basic_auth_file", ValueType::Path, "", 0, 0, "", false, false, "",
       "File holding one line `user:password` that /metrics then requires as HTTP basic auth "
       "(401 without it); relative to the config file's directory. It must be a regular file "
       "(no symlink) owned by root or tierd's user with no group or other permission bits "
       "(chmod 0600); the password is never written in the config. Read at start; a reload does "
       "not change it. Absent: no auth. Needs metrics_listen."},
      {"daemon", "metrics_allow_unauthenticated_remote", ValueType::Bool, "false", 0, 0, "", false,
       false, "",
       "Allow metrics_listen on an address other than loopback (127.0.0.0/8, ::1) without "
       "metrics_basic_auth_file. false: such a config is refused, since anyone who reaches the "
       "port could read the metrics; set it to true only when a firewall or the unit's "
       "IPAddressAllow already limits who reaches the port."},
      {"daemon", "metrics_user", ValueType::String, "\"nobody\"", 0, 0, "", false, false, "",
       "User the metrics exporter process runs as: tierd serves HTTP from a process of its own "
       "that it starts as this user with no capabilities and no_new_privs, and hands it the "
       "rendered metrics (docs/service.md, \"Processes and privileges\"). A user name "
       "(getpwnam), not root; a dedicated user no other process runs as is best. Used when "
       "tierd runs as root; otherwise the exporter keeps tierd's user and drops every "
       "capability. Read at start; a reload does not change it."},
      {"daemon", "control_socket", ValueType::String, "\"/run/tierd/control.sock\"", 0, 0, "",
       false, false, "",
       "Unix socket `tierctl status`, `pause`, `resume` and `restore` talk to tierd through: "
       "an absolute path (at most 107 bytes) in a directory only root can enter (the unit's "
       "/run/tierd, 0700; created 0700 when missing); the socket is 0600 and answers only "
       "root and tierd's own user. A socket there that no process serves is replaced; when "
       "another tierd serves it, this one runs without a control socket (a warning). \"\" "
       "disables it. Read at start; a reload does not change it."},
      {"daemon", "dry_run", ValueType::Bool, "false", 0, 0, "", false, false, "",
       "Decide and report plans but move nothing (same as `tierd --dry-run`)."},
      {"daemon", "log_level", ValueType::Enum, "\"info\"", 0, 0, "error|warning|notice|info|debug",
       false, false, "",
       "Least severe log lines written (syslog priorities): \"notice\" drops the per-tick "
       "progress lines and the per-process scope lines (info), keeping warnings, errors and "
       "state changes. A reload applies it."},
      {"daemon", "progress_interval", ValueType::Duration, "\"60s\"", 0, 86400 * kS, "", false,
       false, "",
       "The per-tick progress line (`tick N: ...`, level info) is written for a tick that planned "
       "or moved pages, changed a scope or had a problem, and otherwise at most once per this "
       "interval: \"60s\" keeps an idle daemon to a line a minute. \"0s\": every tick. A reload "
       "applies it."},
      {"daemon", "full_locate_interval", ValueType::Duration, "\"10s\"", 0, 3600 * kS, "", false,
       false, "",
       "Longest time a process's mappings and page locations (smaps, numa_maps, location "
       "queries: the locate phase) are reused instead of read again. They are read at once "
       "when its /proc/PID/maps (no page-table walk) shows another layout, and on the tick after "
       "a move that found a page gone with its VMA; a move that left every present page of its "
       "range on the target updates them from move_pages' answer, and a range a move left in "
       "part elsewhere (busy, refused, reached in part, or no page present) is queried again "
       "alone on the next tick (up to 64 MiB a process a tick, else a full read; hugetlb ranges "
       "always read in full). The kernel's own moves (reclaim, NUMA balancing, new pages faulted "
       "in inside a mapping) and THPs split after a move are seen within this time. \"0s\": "
       "every tick."},
  };
}

// [tiers]: which nodes are fast and slow, when not detected.
std::vector<KeySpec> tiersKeys() {
  return {
      {"tiers", "fast_nodes", ValueType::NodeList, "", 0, 1023, "", false, false, "node ids",
       "Nodes managed as the fast tier (DRAM). Absent: detected from kernel memory tiers, HMAT, "
       "CPU-less nodes (see `tierctl topology`)."},
      {"tiers", "slow_nodes", ValueType::NodeList, "", 0, 1023, "", false, false, "node ids",
       "Nodes managed as the slow tier (CXL). A node may not be in both lists."},
  };
}

// [sampling]: where access samples come from and what they may cost.
std::vector<KeySpec> samplingKeys() {
  return {
      {"sampling", "source", ValueType::Enum, "\"auto\"", 0, 0,
       "auto|perf|damon|perf-sw-page-faults|replay", false, false, "",
       "Where access samples come from: perf (PEBS/IBS), DAMON vaddr, software page faults "
       "(perf-sw-page-faults: a page's first touch, and NUMA hint faults while "
       "kernel.numa_balancing is on), a recorded trace, or auto (perf when the PMU samples "
       "memory, else DAMON, else software page faults). \"replay\" plays `trace` through "
       "`tierctl simulate --config FILE`; the daemon refuses to start with it (a trace's pids "
       "and addresses are the recording's). Read at start; a reload does not change it."},
      {"sampling", "cpu_budget_percent", ValueType::Number, "1.0", 0.01, 100, "", false, false,
       "% of one CPU",
       "CPU time the sampling of each process may use, measured over windows of at least 1 s: "
       "a perf source's ring draining (its sample period doubles when over, halves when under a "
       "quarter); DAMON's kdamond (/proc/PID/stat) plus tierd's draining (its sampling interval "
       "doubles when over, up to 20 ms, and comes back when under a quarter; "
       "tierd_sampler_budget_backoffs_total counts each raise). Sources keep the budget they "
       "started with."},
      {"sampling", "sample_period", ValueType::Integer, "10007", 1, 4294967295.0, "", false, false,
       "events",
       "Initial events between two samples of the hardware perf sources (PEBS/IBS; "
       "perf_event_attr.sample_period), then adapted to cpu_budget_percent; a prime avoids "
       "lock-step with loops. Software page-fault sampling takes every fault; DAMON ignores it."},
      {"sampling", "damon_max_processes", ValueType::Integer, "16", 1, 64, "", false, false,
       "processes",
       "DAMON samples each process with a kdamond of its own; tierd creates this many when DAMON "
       "is free (nr_kdamonds 0) and records them in /run/tierd/damon.owner, so a tierd started "
       "after a crash reclaims them. Processes beyond it are not sampled (counted). Read at "
       "start."},
      {"sampling", "damon_stat", ValueType::Enum, "\"keep\"", 0, 0, "keep|disable", false, false,
       "",
       "DAMON_STAT (on by default in Debian's 7.3 kernel) holds DAMON exclusively, so no kdamond "
       "of tierd's can start. \"keep\": leave it and fall back to the next source, saying why; "
       "\"disable\": write N to /sys/module/damon_stat/parameters/enabled at start. Read at "
       "start."},
      {"sampling", "max_sample_interval", ValueType::Duration, "\"20ms\"", 1 * kMs, 10 * kS, "",
       false, false, "",
       "Longest DAMON sample interval (the time between two access checks of a region): the "
       "upper bound of adaptive sampling and of the CPU budget's back-off. Where the kernel "
       "tunes the intervals (intervals_goal, 6.15 and later) it is written as max_sample_us and "
       "the aggregation interval scales with it; on older kernels the bound is also at most a "
       "fifth of the 100 ms aggregation interval (20 ms). A longer bound lets the budget hold "
       "where DAMON's checks are expensive (emulated or heavily loaded machines) at the price "
       "of coarser, slower hotness. Read at start (each new kdamond)."},
      {"sampling", "settled_cpu_budget_percent", ValueType::Number, "0.0", 0, 100, "", false, false,
       "% of one CPU",
       "CPU budget of each DAMON source once placement has settled (10 ticks in a row that "
       "planned no more than settle_trickle_percent, saw samples and no process entering or "
       "leaving a scope): the lower of it "
       "and cpu_budget_percent applies, held as cpu_budget_percent is (the sampling interval "
       "doubles per window up to max_sample_interval). When the plans move more, or "
       "when a process enters or leaves, the source writes back the intervals it had before and "
       "samples as before. The settled budget is a saving, not a limit: it lengthens the "
       "interval no further once half of DAMON's checks see an access (beyond that, cold "
       "regions look hot and DAMON merges them). 0: settling changes nothing. The perf sources "
       "keep cpu_budget_percent. Read at start (each new kdamond)."},
      {"sampling", "settled_damon_window", ValueType::Duration, "\"0s\"", 0, 3600 * kS, "", false,
       false, "",
       "During a settled wait (daemon.settled_interval) each DAMON source samples only this "
       "long before the next tick and is paused the rest of the wait (contexts/0/pause: the "
       "kdamond keeps its regions and checks nothing), so a settled workload's kdamond CPU falls "
       "with the share of the wait it sleeps. The window is at least three of the source's "
       "aggregation intervals (two whole aggregations reach the tick); a wait no longer than "
       "that is not paused. A shift of the hot set is seen in the next window, as with the "
       "settled tick alone. Kernels without contexts/0/pause sample throughout (logged once). "
       "\"0s\": never paused; else shorter than daemon.settled_interval. Read each tick."},
      {"sampling", "settle_trickle_percent", ValueType::Number, "2.0", 0, 100, "", false, false,
       "% of the hot bytes",
       "How much the plans may still move while placement counts as settled: the bytes "
       "planned over the last 10 ticks (promotions and demotions, executed or not), as a % of "
       "the bytes the heat model ranks hot this tick over all workloads. Once the hot set is "
       "placed, a sampler keeps finding a few MiB of its tail; without this a trickle of one "
       "2 MiB region every few ticks keeps the sources from ever settling. A plan that moves "
       "more (a shift of the hot set) unsettles them at once, and so does a tick whose heat "
       "model ranks nothing hot (a sampler too coarse to tell hot from cold): the 10 ticks then "
       "start again. 0: settled only after 10 ticks that planned nothing. Read each tick."},
      {"sampling", "trace", ValueType::Path, "", 0, 0, "", false, false, "",
       "Recorded trace file (relative to the config file's directory); required with source = "
       "\"replay\", not allowed otherwise. `tierd --check-config` reads it and rejects a missing, "
       "unreadable or malformed trace."},
  };
}

// [migration]: how pages move: granularity, byte budgets, call size, headroom.
std::vector<KeySpec> migrationKeys() {
  return {
      {"migration", "page_granularity", ValueType::Enum, "\"huge\"", 0, 0, "huge|base", false,
       false, "",
       "huge: one move_pages(2) address per huge page (2 MiB THP, hugetlb page); base: every base "
       "page address (slower; for kernels where THP moves misbehave)."},
      {"migration", "max_promote_mib_per_s", ValueType::Integer, "256", 0, 1048576, "", false,
       false, "MiB/s", "Most bytes promoted (slow -> fast) per second; 0 never promotes."},
      {"migration", "max_demote_mib_per_s", ValueType::Integer, "256", 0, 1048576, "", false, false,
       "MiB/s", "Most bytes demoted (fast -> slow) per second; 0 never demotes."},
      {"migration", "call_latency_target", ValueType::Duration, "\"20ms\"", 0.1 * kMs, 1 * kS, "",
       false, false, "",
       "Each move_pages(2) call is sized to take about this long (the target process is blocked "
       "while its pages move)."},
      {"migration", "fast_headroom", ValueType::BytesOrPercent, "\"5%\"", 0, 50, "", false, false,
       "",
       "Free memory kept on the fast tier: promotions stop above it, demotions start below it. "
       "Bytes or % of the fast tier's capacity."},
      {"migration", "allow_kernel_tiering", ValueType::Bool, "false", 0, 0, "", false, false, "",
       "The kernel's own tiering on the same pages (kernel.numa_balancing with "
       "NUMA_BALANCING_MEMORY_TIERING, bit 2; a running kdamond with a DAMOS migrate_hot or "
       "migrate_cold scheme) fights tierd's placement. false: while it runs tierd plans but moves "
       "nothing, and says why once; true: move anyway (a warning once)."},
  };
}

// [[workload]]: selectors and policy of each workload, then the keys of profile files only.
std::vector<KeySpec> workloadKeys() {
  return {
      {"workload", "name", ValueType::Name, "", 0, 0, "", false, true, "",
       "Unique name; the `workload` label of metrics."},
      {"workload", "cgroup", ValueType::CgroupPath, "", 0, 0, "", false, false, "",
       "Select the processes of this cgroup (path under the cgroup root, e.g. \"/system.slice/"
       "redis.service\"). Exactly one of cgroup, pids, command."},
      {"workload", "pids", ValueType::PidList, "", 1, 4194304, "", false, false, "pids",
       "Select these processes."},
      {"workload", "command", ValueType::String, "", 0, 0, "", false, false, "",
       "Select processes by executable (/proc/PID/exe, which a process cannot set, unlike comm "
       "or argv[0]): an absolute path matches that file (its symlinks resolved); a file name "
       "matches executables of that name, or the target of a symlink of that name beside them "
       "(redis-server -> redis-check-rdb). Anyone can run a copy named like yours: use an "
       "absolute path and `uid` where other users run processes."},
      {"workload", "uid", ValueType::Integer, "", 0, 4294967294.0, "", false, false, "",
       "Only processes whose real uid (/proc/PID/status `Uid:`) is this one; with any selector."},
      {"workload", "profile", ValueType::Name, "", 0, 0, "", false, false, "",
       "Profile to start from: `<config dir>/profiles/NAME.toml`, then "
       "`/etc/tierd/profiles/NAME.toml`. Keys set in the workload beat the profile; the profile "
       "beats the defaults."},
      {"workload", "fast_quota", ValueType::BytesOrPercent, "\"100%\"", 0, 100, "", true, false, "",
       "Fast-tier memory this workload may hold: bytes or % of the fast tier's capacity. Over "
       "it, its coldest regions are demoted."},
      {"workload", "hot_threshold", ValueType::Number, "2.0", 0, 1e9, "", true, false, "samples",
       "Least heat (decayed samples per region) for a slow-tier region to be promoted. Candidates "
       "are ranked by heat against the fast tier's room: this is a floor, not the cut."},
      {"workload", "hot_ratio", ValueType::Number, "0.0", 0, 1000, "", true, false, "x mean heat",
       "Relative cut for promotion: a slow-tier region is promoted only when its heat is at least "
       "this many times the mean heat of the same process's regions (0 = off: any region above "
       "hot_threshold may fill free fast memory). With huge pages even cold regions are sampled "
       "often, so ranking against the process's own mean separates the hot set where a fixed "
       "threshold cannot. Per process, not per workload: each process "
       "is sampled at its own interval (DAMON: its own kdamond), so heat is compared within it."},
      {"workload", "fill_headroom", ValueType::BytesOrPercent, "\"100%\"", 0, 100, "", true, false,
       "",
       "Free fast-tier memory that filling leaves: bytes or % of the fast tier's capacity. With "
       "hot_ratio set, after every region above the cut, the regions below it but at or above "
       "hot_threshold are promoted, warmest first, while the fast tier's free memory stays above "
       "this and above fast_headroom and the workload is under fast_quota. A fill never demotes "
       "anything to make room (no exchange); a hotter region may later exchange it out, and when "
       "free memory falls under fast_headroom the fast-tier regions below the cut are demoted, "
       "coolest first, after the cold ones. Leave "
       "room for what the workload allocates anew (on the fast node while it has room): a full "
       "node sends those allocations to the slow tier and wakes the kernel's reclaim. For "
       "workloads whose misses spread evenly over memory that stays put (a graph streamed every "
       "iteration). \"100%\" (the default): no fill."},
      {"workload", "cold_threshold", ValueType::Number, "0.5", 0, 1e9, "", true, false, "samples",
       "Most heat for a fast-tier region to be demoted when free memory is short (with "
       "fill_headroom set, the regions below the promotion cut go next). Must be below "
       "hot_threshold. Over quota, the coldest regions go regardless."},
      {"workload", "heat_half_life", ValueType::Duration, "\"10s\"", 100 * kMs, 86400 * kS, "",
       true, false, "", "Heat halves after this long without samples."},
      {"workload", "cooldown", ValueType::Duration, "\"30s\"", 0, 86400 * kS, "", true, false, "",
       "A region that moved waits this long before it may move again."},
      // profile files only
      {"profile", "description", ValueType::String, "", 0, 0, "", true, false, "",
       "Free text (profile files only)."},
  };
}

}  // namespace

const std::vector<KeySpec>& configSchema() {
  static const std::vector<KeySpec> kSchema = [] {
    std::vector<KeySpec> all;
    for (auto section : {daemonKeys, tiersKeys, samplingKeys, migrationKeys, workloadKeys}) {
      std::vector<KeySpec> keys = section();
      all.insert(all.end(), keys.begin(), keys.end());
    }
    return all;
  }();
  return kSchema;
}

std::vector<const KeySpec*> sectionKeys(const std::string& section) {
  std::vector<const KeySpec*> out;
  for (const KeySpec& k : configSchema())
    if (section == k.section) out.push_back(&k);
  return out;
}

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string typeText(const KeySpec& k) {
  switch (k.type) {
    case ValueType::Bool:
      return "bool";
    case ValueType::Integer:
      return "integer";
    case ValueType::Number:
      return "number";
    case ValueType::String:
      return "string";
    case ValueType::Enum: {
      std::string out = "string: ";
      for (const char* c = k.choices; *c; ++c)
        out += (*c == '|') ? std::string(" \\| ") : std::string(1, *c);
      return out;
    }
    case ValueType::Duration:
      return "duration string, or integer ms as `" + std::string(k.key) + "_ms`";
    case ValueType::BytesOrPercent:
      return "byte size or percentage string";
    case ValueType::NodeList:
      return "array of integers";
    case ValueType::PidList:
      return "array of integers";
    case ValueType::Address:
      return "string \"host:port\"";
    case ValueType::CgroupPath:
      return "string (cgroup path)";
    case ValueType::Name:
      return "string (name)";
    case ValueType::Path:
      return "string (file path)";
  }
  return "?";
}

std::string rangeText(const KeySpec& k) {
  switch (k.type) {
    case ValueType::Integer:
    case ValueType::Number:
    case ValueType::NodeList:
    case ValueType::PidList:
      return num(k.min) + " .. " + num(k.max);
    case ValueType::Duration:
      return formatDuration(static_cast<uint64_t>(k.min)) + " .. " +
             formatDuration(static_cast<uint64_t>(k.max));
    case ValueType::BytesOrPercent:
      return formatPercent(k.min) + " .. " + formatPercent(k.max) + ", or 0B .. " +
             formatByteSize(kMaxConfigBytes);
    case ValueType::String:
      return std::string(k.key) == "command" ? "1 .. 15 bytes" : "";
    case ValueType::Name:
      return "[A-Za-z0-9_.-], 1 .. 64 characters";
    default:
      return "";
  }
}

}  // namespace

std::string renderSchemaMarkdown() {
  std::ostringstream out;
  out << "# tierd configuration\n\n"
         "<!-- Generated by `tierd --print-config-schema` from policy/ConfigSchema.cpp; a unit "
         "test "
         "fails when this file differs. Do not edit by hand. -->\n\n"
         "tierd reads one TOML file (default `/etc/tierd/tierd.toml`, `--config FILE`). Check one "
         "with `tierd --check-config --config FILE`: it prints every error at once, each as\n"
         "`file:line:column: key.path: message`, or the compiled result, and exits non-zero on "
         "error. On SIGHUP the file is compiled aside and swapped in at a tick boundary; on any "
         "error the running configuration stays.\n\n"
         "## Rules\n\n"
         "- Unknown keys and sections are errors (with a \"did you mean\" suggestion).\n"
         "- Types and ranges are checked; an integer that does not fit its key's range or type is "
         "an error, never truncated.\n"
         "- Byte sizes: an integer immediately followed by `B`, `KiB`, `MiB`, `GiB` or `TiB` "
         "(`\"2GiB\"`), or by `K`, `M`, `G` or `T`, the same binary units (`\"2G\"` is "
         "`\"2GiB\"`, as on tierctl's command line), at most `1024TiB` (1 PiB). No space, sign or "
         "fraction; SI (`\"2GB\"`) and lower-case (`\"2gib\"`, `\"2g\"`) units are rejected.\n"
         "- Durations: an integer immediately followed by `ns`, `us`, `ms`, `s`, `m` or `h` "
         "(`\"500ms\"`); or, under the key name with `_ms` appended, an integer of milliseconds "
         "(`interval_ms = 500`). Setting both forms is an error. A value that does not fit a "
         "signed 64-bit count of nanoseconds is an error, never wrapped.\n"
         "- Percentages: a number with at most 3 fraction digits followed by `%` (`\"25%\"`, "
         "`\"2.5%\"`).\n"
         "- Workload settings are resolved in layers: the defaults below, then the workload's "
         "profile (`<config dir>/profiles/NAME.toml`, then `/etc/tierd/profiles/NAME.toml`), then "
         "the keys set in the `[[workload]]` entry.\n"
         "- Heat is the exponentially decayed number of access samples that fell in a region "
         "(2 MiB; 1 GiB for 1 GiB hugetlb pages).\n"
      << "- Files: the config and its profiles must be regular files (a directory, FIFO or device "
         "is refused unread) of at most "
      << kMaxConfigFileBytes / (size_t{1024} * 1024)
      << " MiB, owned by root or tierd's user and not writable by group or others, under "
         "directories that no other user may write (sticky ones excepted). The daemon at start, "
         "a reload and `tierd --check-config` apply the same rules.\n"
      << "- Limits, checked before the TOML is parsed: a dotted key or table header has at most "
      << kMaxKeyParts << " parts, and at most " << kMaxNesting
      << " arrays and inline tables nest (a table header's brackets count). A config has at most "
      << kMaxWorkloads << " `[[workload]]` entries and lists at most " << kMaxPids
      << " pids in all; an array of ids has at most " << kMaxPids
      << " entries. A config names at most " << kMaxProfiles << " distinct profiles.\n"
      << "- Strings that name a file, a cgroup or a command (`command`, `cgroup`, `trace`, "
         "`metrics_basic_auth_file`) may not contain NUL or other control characters.\n";
  const char* sections[][2] = {
      {"daemon", "## [daemon]\n"},
      {"tiers", "## [tiers]\n"},
      {"sampling", "## [sampling]\n"},
      {"migration", "## [migration]\n"},
      {"workload", "## [[workload]] (any number; also the keys of profile files where marked)\n"},
      {"profile", "## Profile files only\n"},
  };
  for (auto& s : sections) {
    out << "\n"
        << s[1] << "\n| key | type | unit | default | range | profile | meaning |\n"
        << "|---|---|---|---|---|---|---|\n";
    for (const KeySpec* k : sectionKeys(s[0])) {
      std::string def = k->required ? "required" : (*k->defaultText ? k->defaultText : "none");
      out << "| `" << k->key << "` | " << typeText(*k) << " | " << k->unit << " | `" << def
          << "` | " << rangeText(*k) << " | " << (k->inProfile ? "yes" : "") << " | " << k->help
          << " |\n";
    }
  }
  return out.str();
}

}  // namespace tierd::policy

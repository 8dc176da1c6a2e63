#pragma once
// A DAMON sysfs tree under a temp dir that behaves like the kernel's for the files DamonSource
// uses (directories appear when nr_* files are written, state commands act) and logs every write
// in order, like awslabs/damo's dry-run filesystem. Paths in the log are relative to
// /sys/kernel/mm/damon/admin/kdamonds.

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "TempTree.h"
#include "telemetry/hotness/DamonSource.h"

namespace tierd::telemetry::testing {

struct FakeRegion {
  uint64_t start, end, nrAccesses, age;
};

class FakeDamonFs : public DamonFs {
 public:
  static constexpr const char* kRoot = "/sys/kernel/mm/damon/admin/kdamonds";

  FakeDamonFs() : root_(tree_.dir()) { tree_.file(std::string(kRoot) + "/nr_kdamonds", "0\n"); }

  std::vector<std::string> log;
  std::vector<std::string> reads;   // every readAttr path, in order
  std::vector<FakeRegion> regions;  // served on update_schemes_tried_regions
  bool processGone = false;         // kdamond stopped by itself: state reads off
  bool failCommit = false;          // `commit` answers EINVAL
  int emptyAnswers = 0;             // the next N tried-regions updates collect nothing (6.12)
  int commits = 0;                  // successful `commit` writes
  std::string committedSampleUs;    // sample_us as the last commit read it
  std::string availOperations = "fvaddr\npaddr\nvaddr\n";
  /// The kernel has DAMON intervals auto-tuning (6.15+): contexts get
  /// monitoring_attrs/intervals/intervals_goal/{access_bp,aggrs,min_sample_us,max_sample_us}.
  bool intervalsGoal = false;
  /// What `update_tuned_intervals` writes into intervals/sample_us and aggr_us (the kernel's
  /// tuned intervals); empty: the files keep what they hold.
  std::string tunedSampleUs, tunedAggrUs;
  int tunedIntervalsUpdates = 0;  // successful `update_tuned_intervals` writes
  /// The kernel can pause a context (7.3): contexts/N/pause, "N" whenever nr_contexts makes the
  /// contexts anew, kstrtobool input.
  bool pauseFile = false;
  std::string committedPause;  // contexts/0/pause as the last commit read it

  const TempTree& tree() const { return tree_; }

  static constexpr const char* kTracefs = "/sys/kernel/tracing";
  /// Mounts a fake tracefs at `mount` whose damon_aggregated event has `format` (the kernel's
  /// events/damon/damon_aggregated/format text); mkdir under its instances/ creates an instance
  /// with buffer_size_kb, trace_pipe and the event's enable, filter and format.
  void mountTracefs(const std::string& format, const std::string& mount = kTracefs) {
    tracefs_ = mount;
    format_ = format;
    tree_.file(mount + "/events/damon/damon_aggregated/format", format);
    tree_.file(mount + "/events/damon/damon_aggregated/enable", "0\n");
    std::filesystem::create_directories(root_.path(mount + "/instances"));
  }
  /// Appends `text` to the trace_pipe of every instance (what the kernel would emit).
  void emit(const std::string& text) {
    for (const auto& name : root_.list(tracefs_ + "/instances").valueOr({})) {
      const std::string pipe = tracefs_ + "/instances/" + name + "/trace_pipe";
      tree_.file(pipe, root_.read(pipe).valueOr("") + text);
    }
  }
  int pipeReads = 0;  // readAvailable calls

  Status makeDir(const std::string& abs) override {
    log.push_back("mkdir " + abs);
    if (tracefs_.empty() || abs.rfind(tracefs_ + "/instances/", 0) != 0)
      return Error::sys(ENOENT, "cannot mkdir", abs);
    if (root_.exists(abs)) return Error::sys(EEXIST, "cannot mkdir", abs);
    tree_.file(abs + "/buffer_size_kb", "7\n");
    tree_.file(abs + "/trace_pipe", "");
    tree_.file(abs + "/events/damon/damon_aggregated/format", format_);
    tree_.file(abs + "/events/damon/damon_aggregated/enable", "0\n");
    tree_.file(abs + "/events/damon/damon_aggregated/filter", "none\n");
    return Ok{};
  }
  Status removeDir(const std::string& abs) override {
    log.push_back("rmdir " + abs);
    if (!root_.exists(abs)) return Error::sys(ENOENT, "cannot rmdir", abs);
    std::filesystem::remove_all(root_.path(abs));
    return Ok{};
  }
  Result<std::string> readAvailable(const std::string& abs) override {
    ++pipeReads;
    auto text = root_.read(abs);
    if (text) tree_.file(abs, "");  // consumed
    return text;
  }

  /// Creates someone else's kdamond (as on this host: state on, paddr).
  void addForeignKdamond() {
    REQUIRE(doWrite(std::string(kRoot) + "/nr_kdamonds", "1").ok());
    const std::string k = std::string(kRoot) + "/0";
    tree_.file(k + "/state", "on\n");
    tree_.file(k + "/pid", "77\n");
    REQUIRE(doWrite(k + "/contexts/nr_contexts", "1").ok());
    tree_.file(k + "/contexts/0/avail_operations", "paddr\n");
    tree_.file(k + "/contexts/0/operations", "paddr\n");
  }

  Result<std::string> readAttr(const std::string& abs) override {
    reads.push_back(abs);
    if (processGone && abs.size() > 6 && abs.substr(abs.size() - 6) == "/state")
      return std::string("off");
    return root_.readAttr(abs);
  }
  bool exists(const std::string& abs) override { return root_.exists(abs); }
  Result<std::vector<std::string>> list(const std::string& abs) override { return root_.list(abs); }
  Status write(const std::string& abs, const std::string& data) override {
    const std::string root = std::string(kRoot) + "/";
    log.push_back((abs.rfind(root, 0) == 0 ? abs.substr(root.size()) : abs) + " <- " + data);
    if (processGone && abs.size() > 6 && abs.substr(abs.size() - 6) == "/state" && data != "off")
      return Error::sys(EINVAL, "cannot write", abs);
    return doWrite(abs, data);
  }

 private:
  Status doWrite(const std::string& abs, const std::string& data) {
    if (!root_.exists(abs)) return Error::sys(ENOENT, "cannot open for writing", abs);
    namespace fs = std::filesystem;
    const fs::path p(abs);
    const std::string name = p.filename();
    const std::string dir = p.parent_path();
    const size_t n = name.rfind("nr_", 0) == 0 ? std::stoul(data) : 0;
    auto recreate = [&](auto make) {
      for (const auto& e : fs::directory_iterator(root_.path(dir)))
        if (e.is_directory() && std::isdigit(e.path().filename().string()[0])) fs::remove_all(e);
      for (size_t i = 0; i < n; ++i)
        make(dir + "/" + std::to_string(i));
    };
    if (name == "nr_kdamonds") {
      // mm/damon/sysfs.c: -EBUSY while any kdamond runs.
      for (const auto& e : fs::directory_iterator(root_.path(dir))) {
        const std::string state = dir + "/" + e.path().filename().string() + "/state";
        if (!processGone && e.is_directory() && root_.readAttr(state).valueOr("") == "on")
          return Error::sys(EBUSY, "a kdamond runs", abs);
      }
      recreate([&](const std::string& k) {
        tree_.file(k + "/state", "off\n");
        tree_.file(k + "/pid", "-1\n");
        tree_.file(k + "/contexts/nr_contexts", "0\n");
      });
    } else if (name == "nr_contexts") {
      recreate([&](const std::string& c) {
        tree_.file(c + "/avail_operations", availOperations);
        tree_.file(c + "/operations", "vaddr\n");
        for (const char* f : {"intervals/sample_us", "intervals/aggr_us", "intervals/update_us",
                              "nr_regions/min", "nr_regions/max"})
          tree_.file(c + "/monitoring_attrs/" + f, "0\n");
        if (intervalsGoal)
          for (const char* f : {"access_bp", "aggrs", "min_sample_us", "max_sample_us"})
            tree_.file(c + "/monitoring_attrs/intervals/intervals_goal/" + f, "0\n");
        if (pauseFile) tree_.file(c + "/pause", "N\n");
        tree_.file(c + "/targets/nr_targets", "0\n");
        tree_.file(c + "/schemes/nr_schemes", "0\n");
      });
    } else if (name == "nr_targets") {
      recreate([&](const std::string& t) {
        tree_.file(t + "/pid_target", "0\n");
        tree_.file(t + "/regions/nr_regions", "0\n");
      });
    } else if (name == "nr_regions") {
      recreate([&](const std::string& r) {
        tree_.file(r + "/start", "0\n");
        tree_.file(r + "/end", "0\n");
      });
    } else if (name == "nr_schemes") {
      recreate([&](const std::string& s) {
        tree_.file(s + "/action", "stat\n");
        for (const char* f : {"sz", "nr_accesses", "age"}) {
          tree_.file(s + "/access_pattern/" + f + "/min", "0\n");
          tree_.file(s + "/access_pattern/" + f + "/max", "0\n");
        }
        tree_.file(s + "/tried_regions/total_bytes", "0\n");
      });
    } else if (name == "state") {
      if (data == "on") {
        tree_.file(dir + "/pid", "4242\n");
      } else if (data == "off") {
        tree_.file(dir + "/pid", "-1\n");
      } else if (data == "update_schemes_tried_regions") {
        const std::string tr = dir + "/contexts/0/schemes/0/tried_regions";
        fs::remove_all(root_.path(tr));
        uint64_t total = 0;
        const bool empty = emptyAnswers > 0;
        if (empty) --emptyAnswers;
        for (size_t i = 0; i < (empty ? 0 : regions.size()); ++i) {
          const std::string r = tr + "/" + std::to_string(i);
          tree_.file(r + "/start", std::to_string(regions[i].start) + "\n");
          tree_.file(r + "/end", std::to_string(regions[i].end) + "\n");
          tree_.file(r + "/nr_accesses", std::to_string(regions[i].nrAccesses) + "\n");
          tree_.file(r + "/age", std::to_string(regions[i].age) + "\n");
          total += regions[i].end - regions[i].start;
        }
        tree_.file(tr + "/total_bytes", std::to_string(total) + "\n");
        return Ok{};
      } else if (data == "update_tuned_intervals" && intervalsGoal) {
        const std::string iv = dir + "/contexts/0/monitoring_attrs/intervals/";
        if (!tunedSampleUs.empty()) tree_.file(iv + "sample_us", tunedSampleUs + "\n");
        if (!tunedAggrUs.empty()) tree_.file(iv + "aggr_us", tunedAggrUs + "\n");
        ++tunedIntervalsUpdates;
        return Ok{};
      } else if (data == "commit") {
        // The kernel re-reads every attribute file; a stopped kdamond answers EINVAL.
        if (failCommit || readAttr(dir + "/state").valueOr("") != "on")
          return Error::sys(EINVAL, "commit", abs);
        if (!validIntervals(dir + "/contexts/0/monitoring_attrs/intervals/"))
          return Error::sys(EINVAL, "commit", abs);
        committedSampleUs =
            readAttr(dir + "/contexts/0/monitoring_attrs/intervals/sample_us").valueOr("");
        committedPause = readAttr(dir + "/contexts/0/pause").valueOr("");
        ++commits;
        return Ok{};
      } else {
        return Error::sys(EINVAL, "bad state command", abs);
      }
      tree_.file(abs, data + "\n");
      return Ok{};
    }
    if (name == "pause" && data != "Y" && data != "N" && data != "1" && data != "0")
      return Error::sys(EINVAL, "kstrtobool", abs);
    return root_.write(abs, data);
  }

  /// What 7.3's damon_set_attrs() (mm/damon/core.c) refuses with -EINVAL: sample_us above
  /// aggr_us; with tuning on (aggrs != 0), min_sample_us above max_sample_us or sample_us outside
  /// [min_sample_us, max_sample_us] (damon_valid_intervals_goal()).
  bool validIntervals(const std::string& iv) {
    auto num = [&](const std::string& f) { return std::stoull(readAttr(iv + f).valueOr("0")); };
    const uint64_t sample = num("sample_us"), aggr = num("aggr_us");
    if (sample > aggr) return false;
    if (!intervalsGoal || num("intervals_goal/aggrs") == 0) return true;
    const uint64_t lo = num("intervals_goal/min_sample_us");
    const uint64_t hi = num("intervals_goal/max_sample_us");
    return lo <= hi && sample >= lo && sample <= hi;
  }

  TempTree tree_;
  sys::SysRoot root_;
  std::string tracefs_, format_;
};

}  // namespace tierd::telemetry::testing

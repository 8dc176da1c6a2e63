#include "telemetry/hotness/DamonPool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

namespace {

const std::string kKdamonds = "/sys/kernel/mm/damon/admin/kdamonds";

// Modules whose DAMON context is started exclusive (damon_start(..., true)).
const char* const kExclusiveModules[] = {"damon_stat", "damon_reclaim", "damon_lru_sort"};

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

Result<uint64_t> readU64(DamonFs& fs, const std::string& abs) {
  auto text = fs.readAttr(abs);
  if (!text) return text.error();
  return sys::parseU64(text.value(), abs);
}

}  // namespace

std::string exclusiveHolder(DamonFs& fs) {
  for (const char* m : kExclusiveModules) {
    auto enabled = fs.readAttr(std::string("/sys/module/") + m + "/parameters/enabled");
    if (enabled && enabled.value() == "Y") return m;
  }
  return "";
}

std::string exclusiveHolderWhy(const std::string& holder) {
  std::string why = "DAMON is held exclusively by " + holder + " (/sys/module/" + holder +
                    "/parameters/enabled = Y): every sysfs kdamond fails to start with EBUSY "
                    "(mm/damon/core.c damon_start). Boot with " +
                    holder + ".enabled=N, or write N to that file";
  if (holder == "damon_stat")
    why += ", or set sampling.damon_stat = \"disable\" to let tierd turn it off at start";
  return why;
}

Result<DamonOwnerRecord> parseDamonOwnerRecord(const std::string& line,
                                               const std::string& context) {
  DamonOwnerRecord r;
  std::istringstream in(line);
  std::string field;
  int seen = 0;
  while (in >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos)
      return Error::input("expected key=value, got '" + field + "'", context);
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "boot_id") {
      if (value.empty()) return Error::input("empty boot_id", context);
      r.bootId = value;
      seen |= 4;
      continue;
    }
    auto n = sys::parseU64(value, context + ": " + key);
    if (!n) return n.error();
    if (key == "tierd_pid" && n.value() > 0 && n.value() <= 4194304) {
      r.pid = static_cast<pid_t>(n.value());
      seen |= 1;
    } else if (key == "tierd_start") {
      r.startTime = n.value();
      seen |= 2;
    } else if (key == "nr_kdamonds" && n.value() >= 1 && n.value() <= 64) {
      r.nrKdamonds = static_cast<int>(n.value());
      seen |= 8;
    } else {
      return Error::input("unknown or out-of-range field '" + field + "'", context);
    }
  }
  if (seen != 15)
    return Error::input("needs tierd_pid, tierd_start, boot_id and nr_kdamonds", context);
  return r;
}

DamonPool::DamonPool(DamonFs& fs, DamonPoolConfig config)
    : fs_(fs), config_(std::move(config)), used_(static_cast<size_t>(config_.capacity), false) {}

DamonPool::~DamonPool() {
  for (size_t i = 0; i < used_.size(); ++i)
    if (used_[i]) release(static_cast<int>(i));
}

std::string DamonPool::kdamondDir(int slot) {
  return kKdamonds + "/" + std::to_string(slot);
}

int DamonPool::inUse() const {
  return static_cast<int>(std::count(used_.begin(), used_.end(), true));
}

Status DamonPool::checkOwnership() {
  auto nr = fs_.readAttr(kKdamonds + "/nr_kdamonds");
  if (!nr) return nr.error();
  if (nr.value() != std::to_string(config_.capacity))
    return Error::env("nr_kdamonds changed to " + nr.value() +
                          " (ours: " + std::to_string(config_.capacity) +
                          ") behind our back; not touching DAMON any more",
                      kKdamonds);
  return Ok{};
}

Status DamonPool::writeRecord() {
  if (config_.ownerFile.empty()) return Ok{};
  const std::string dir = dirOf(config_.ownerFile);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::sys(errno, "cannot create the DAMON ownership folder", dir);
  auto boot = fs_.readAttr("/proc/sys/kernel/random/boot_id");
  if (!boot) return boot.error();
  const std::string tmp = config_.ownerFile + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "tierd_pid=" << config_.selfPid << " tierd_start=" << config_.selfStartTime
        << " boot_id=" << boot.value() << " nr_kdamonds=" << config_.capacity << "\n";
    out.flush();
    if (!out) return Error::sys(EIO, "cannot write the DAMON ownership record", tmp);
  }
  if (::rename(tmp.c_str(), config_.ownerFile.c_str()) != 0)
    return Error::sys(errno, "cannot rename the DAMON ownership record", config_.ownerFile);
  return Ok{};
}

void DamonPool::removeRecord() {
  if (!config_.ownerFile.empty()) ::unlink(config_.ownerFile.c_str());
}

Result<int> DamonPool::reclaimOrphans() {
  if (config_.ownerFile.empty()) return 0;
  std::ifstream in(config_.ownerFile);
  if (!in) return 0;  // no record: nothing of ours was left behind
  std::string line;
  std::getline(in, line);
  in.close();
  auto rec = parseDamonOwnerRecord(line, config_.ownerFile);
  if (!rec) {
    removeRecord();
    return rec.error().within("DAMON ownership record removed");
  }
  auto boot = fs_.readAttr("/proc/sys/kernel/random/boot_id");
  if (!boot || boot.value() != rec->bootId) {
    removeRecord();  // another boot: its kdamonds died with it
    return 0;
  }
  const std::string stat = "/proc/" + std::to_string(rec->pid) + "/stat";
  if (auto text = fs_.readAttr(stat)) {
    auto start = sys::parseStatStartTime(text.value(), stat);
    // A zombie (state Z, field 3) has exited: its kdamonds are orphans already.
    const size_t close = text.value().rfind(')');
    const bool zombie = close != std::string::npos && text.value().compare(close, 3, ") Z") == 0;
    if (start && start.value() == rec->startTime && rec->pid != config_.selfPid && !zombie)
      return Error::env("another tierd (pid " + std::to_string(rec->pid) +
                            ") owns DAMON's kdamonds; not touching them",
                        config_.ownerFile);
  }
  auto nr = readU64(fs_, kKdamonds + "/nr_kdamonds");
  if (!nr) return nr.error();
  if (nr.value() == 0) {  // died before creating them, or after removing them
    removeRecord();
    return 0;
  }
  if (nr.value() != static_cast<uint64_t>(rec->nrKdamonds)) {
    removeRecord();
    return Error::env("the dead tierd (pid " + std::to_string(rec->pid) + ") recorded " +
                          std::to_string(rec->nrKdamonds) + " kdamonds, nr_kdamonds reads " +
                          std::to_string(nr.value()) +
                          ": someone changed DAMON since; left alone, record removed",
                      kKdamonds);
  }
  for (int i = 0; i < rec->nrKdamonds; ++i) {
    const std::string state = kdamondDir(i) + "/state";
    auto s = fs_.readAttr(state);
    if (s && s.value() == "on")
      if (Status w = fs_.write(state, "off"); !w) return w.error();
  }
  if (Status w = fs_.write(kKdamonds + "/nr_kdamonds", "0"); !w) return w.error();
  removeRecord();
  return rec->nrKdamonds;
}

Result<int> DamonPool::acquire() {
  if (!created_) {
    if (std::string holder = exclusiveHolder(fs_); !holder.empty())
      return Error::env(exclusiveHolderWhy(holder), "/sys/module/" + holder);
    // Only whether DAMON is there and free: the daemon's sampling probe read vaddr's evidence.
    DamonProbe probe = probeDamon(fs_, VaddrEvidence::Skip);
    if (!probe.present) return Error{0, ErrorKind::Unsupported, probe.why, "damon"};
    if (!probe.usable) return Error::env(probe.why, kKdamonds);
    if (config_.capacity < 1 || config_.capacity > 64)
      return Error::input("DAMON pool capacity must be 1 .. 64", "damon");
    // Recorded before the kdamonds exist, so a crash right after still leaves a record.
    if (Status s = writeRecord(); !s) return s.error();
    // nr_kdamonds reads 0: nobody else's kdamond exists, creating ours removes nothing.
    if (Status s = fs_.write(kKdamonds + "/nr_kdamonds", std::to_string(config_.capacity)); !s) {
      removeRecord();
      return s.error();
    }
    created_ = true;
  } else if (Status s = checkOwnership(); !s) {
    return s.error();
  }
  for (size_t i = 0; i < used_.size(); ++i)
    if (!used_[i] && !lost_.count(static_cast<int>(i))) {
      used_[i] = true;
      return static_cast<int>(i);
    }
  return Error::env("all " + std::to_string(config_.capacity) +
                        " of tierd's kdamonds are in use (one per sampled process; "
                        "sampling.damon_max_processes)",
                    kKdamonds);
}

void DamonPool::release(int slot, bool mayTouch) {
  if (slot < 0 || static_cast<size_t>(slot) >= used_.size() || !used_[slot]) return;
  used_[slot] = false;
  if (!mayTouch) lost_.insert(slot);  // someone else's kdamond runs there now: never hand it out
  if (!created_) return;
  const bool ours = mayTouch && checkOwnership().ok();
  if (ours) {
    auto state = fs_.readAttr(kdamondDir(slot) + "/state");
    if (state && state.value() == "on") (void)fs_.write(kdamondDir(slot) + "/state", "off");
  }
  if (inUse() > 0 || !ours) return;
  // The last one: remove ours (only while nr_kdamonds is still our count: all of them ours).
  // The record goes only once that worked, so that a failed removal can still be reclaimed.
  if (!fs_.write(kKdamonds + "/nr_kdamonds", "0").ok()) return;
  removeRecord();
  created_ = false;
  lost_.clear();
}

}  // namespace tierd::telemetry

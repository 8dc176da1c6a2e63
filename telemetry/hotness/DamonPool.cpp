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

namespace {

// The first line: tierd_pid=P tierd_start=T boot_id=B nr_kdamonds=N.
Status parseOwnerLine(const std::string& line, const std::string& context, DamonOwnerRecord& r) {
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
  return Ok{};
}

// A kdamond line: kdamond=I pid=K operations=O target=PID (K -1 when not running).
Status parseSlotLine(const std::string& line, const std::string& context, DamonOwnerRecord& r) {
  std::istringstream in(line);
  std::string field;
  int seen = 0, slot = -1;
  DamonSlotRecord s;
  while (in >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos)
      return Error::input("expected key=value, got '" + field + "'", context);
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "operations" && !value.empty()) {
      s.operations = value;
      seen |= 4;
      continue;
    }
    if (key == "pid" && value == "-1") {
      s.kdamondPid = -1;
      seen |= 2;
      continue;
    }
    auto n = sys::parseU64(value, context + ": " + key);
    if (!n) return n.error();
    if (key == "kdamond" && n.value() < static_cast<uint64_t>(r.nrKdamonds)) {
      slot = static_cast<int>(n.value());
      seen |= 1;
    } else if (key == "pid" && n.value() > 0 && n.value() <= 4194304) {
      s.kdamondPid = static_cast<pid_t>(n.value());
      seen |= 2;
    } else if (key == "target" && n.value() > 0 && n.value() <= 4194304) {
      s.target = static_cast<pid_t>(n.value());
      seen |= 8;
    } else {
      return Error::input("unknown or out-of-range field '" + field + "'", context);
    }
  }
  if (seen != 15)
    return Error::input("a kdamond line needs kdamond, pid, operations and target", context);
  if (!r.slots.emplace(slot, s).second)
    return Error::input("kdamond " + std::to_string(slot) + " recorded twice", context);
  return Ok{};
}

}  // namespace

Result<DamonOwnerRecord> parseDamonOwnerRecord(const std::string& text,
                                               const std::string& context) {
  DamonOwnerRecord r;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      if (Status s = parseOwnerLine(line, context, r); !s) return s.error();
      first = false;
    } else if (line.find_first_not_of(" \t") != std::string::npos) {
      if (Status s = parseSlotLine(line, context, r); !s) return s.error();
    }
  }
  if (first) return Error::input("empty ownership record", context);
  return r;
}

std::string formatDamonOwnerRecord(const DamonOwnerRecord& rec) {
  std::ostringstream out;
  out << "tierd_pid=" << rec.pid << " tierd_start=" << rec.startTime << " boot_id=" << rec.bootId
      << " nr_kdamonds=" << rec.nrKdamonds << "\n";
  for (const auto& [slot, s] : rec.slots)
    out << "kdamond=" << slot << " pid=" << s.kdamondPid << " operations=" << s.operations
        << " target=" << s.target << "\n";
  return out.str();
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
  DamonOwnerRecord rec;
  rec.pid = config_.selfPid;
  rec.startTime = config_.selfStartTime;
  rec.bootId = boot.value();
  rec.nrKdamonds = config_.capacity;
  rec.slots = slots_;
  const std::string tmp = config_.ownerFile + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << formatDamonOwnerRecord(rec);
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

Status DamonPool::matchesRecord(int slot, const DamonOwnerRecord& rec) {
  const std::string dir = kdamondDir(slot);
  const auto line = rec.slots.find(slot);
  const DamonSlotRecord* want = line == rec.slots.end() ? nullptr : &line->second;
  auto state = fs_.readAttr(dir + "/state");
  if (!state) return state.error();
  const std::string ctx = dir + "/contexts/0";
  const std::string ops = fs_.readAttr(ctx + "/operations").valueOr("");
  const std::string target = fs_.readAttr(ctx + "/targets/0/pid_target").valueOr("");
  const bool fresh = fs_.readAttr(dir + "/contexts/nr_contexts").valueOr("") == "0";
  const std::string what = "kdamond " + std::to_string(slot) + " (state " + state.value() +
                           (fresh ? ", no context" : ", operations " + ops + ", target " + target);
  auto differs = [&](const std::string& why) {
    return Error::env(
        what + ") " + why + ": not the dead tierd's (pid " + std::to_string(rec.pid) + ")", dir);
  };
  const bool sameConfig =
      want && !fresh && ops == want->operations && target == std::to_string(want->target);
  if (state.value() == "on") {
    const std::string pid = fs_.readAttr(dir + "/pid").valueOr("?");
    if (!want || want->kdamondPid <= 0)
      return differs("runs as pid " + pid + ", and the record has no kdamond running there");
    if (pid != std::to_string(want->kdamondPid))
      return differs("runs as pid " + pid + ", the record's ran as " +
                     std::to_string(want->kdamondPid));
    if (!sameConfig) return differs("is configured otherwise than recorded");
    return Ok{};
  }
  if (fresh) {
    // As nr_kdamonds makes them. One recorded running cannot be: only a new nr_kdamonds write
    // empties a kdamond that was configured, so someone recreated them since.
    if (want && want->kdamondPid > 0)
      return differs("was made anew since the record's kdamond ran there");
    return Ok{};
  }
  if (!want) return differs("is configured, and the record has no kdamond of its own there");
  if (!sameConfig)
    return differs("is configured otherwise than recorded (operations " + want->operations +
                   ", target " + std::to_string(want->target) + ")");
  return Ok{};
}

Result<int> DamonPool::reclaimOrphans() {
  if (config_.ownerFile.empty()) return 0;
  std::ifstream in(config_.ownerFile);
  if (!in) return 0;  // no record: nothing of ours was left behind
  std::stringstream recorded;
  recorded << in.rdbuf();
  in.close();
  auto rec = parseDamonOwnerRecord(recorded.str(), config_.ownerFile);
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
  // Every kdamond must be the dead tierd's: an administrator's that merely makes the count
  // match is never turned off (writing nr_kdamonds would remove it).
  for (int i = 0; i < rec->nrKdamonds; ++i)
    if (Status m = matchesRecord(i, rec.value()); !m) {
      removeRecord();
      return m.error().within("DAMON left alone, ownership record removed");
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

Status DamonPool::noteSlot(int slot, const DamonSlotRecord& what) {
  if (slot < 0 || static_cast<size_t>(slot) >= used_.size() || !used_[slot])
    return Error{0, ErrorKind::Internal, "slot not acquired", kdamondDir(slot)};
  slots_[slot] = what;
  return writeRecord();
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
  // Off, it keeps its configuration; taken over, it is not ours to claim any more.
  if (auto line = slots_.find(slot); line != slots_.end()) {
    if (ours)
      line->second.kdamondPid = -1;
    else
      slots_.erase(line);
    if (inUse() > 0 || !ours) (void)writeRecord();
  }
  if (inUse() > 0 || !ours) return;
  // The last one: remove ours (only while nr_kdamonds is still our count: all of them ours).
  // The record goes only once that worked, so that a failed removal can still be reclaimed.
  if (!fs_.write(kKdamonds + "/nr_kdamonds", "0").ok()) return;
  removeRecord();
  created_ = false;
  lost_.clear();
  slots_.clear();
}

}  // namespace tierd::telemetry

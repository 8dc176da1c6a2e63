#include "tierd/daemon/ControlStatus.h"

#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tierd/core/Units.h"

namespace tierd::daemon {
namespace {

using nlohmann::json;

json restoreJson(const RestoreStatus& r) {
  return {{"request", r.request},
          {"done", r.done},
          {"ticks", r.ticks},
          {"moved_bytes", r.movedBytes},
          {"planned_bytes", r.plannedBytes},
          {"failed_pages", r.failedPages},
          {"blocked_bytes", r.blockedBytes},
          {"skipped_mappings", r.skippedMappings}};
}

// "tiering", "paused", "restoring", "restored" (tierctl status's STATE column).
std::string workloadState(const StatusFacts& f, const std::string& name) {
  if (auto r = f.restores.find(name); r != f.restores.end())
    return r->second.done ? "restored" : "restoring";
  if (f.hold.restore.count(name)) return "restoring";
  if (f.hold.all || f.hold.workloads.count(name)) return "paused";
  return f.dryRun ? "dry-run" : "tiering";
}

json workloadJson(const StatusFacts& f, const WorkloadReport& w) {
  json sources = json::array();
  for (const SourceState& s : f.report->sourceStates)
    if (auto it = f.pidWorkloads.find(s.pid); it != f.pidWorkloads.end() && it->second == w.name)
      sources.push_back({{"pid", s.pid}, {"source", s.source}, {"state", s.state}});
  json out = {
      {"name", w.name},
      {"state", workloadState(f, w.name)},
      {"pids", w.pids},
      {"located_bytes", {{"fast", w.fastBytes}, {"slow", w.slowBytes}}},
      {"hot_bytes", {{"fast", w.hotFastBytes}, {"slow", w.hotSlowBytes}}},
      {"cold_bytes", {{"fast", w.coldFastBytes}, {"slow", w.coldSlowBytes}}},
      {"planned_bytes", {{"promote", w.plannedPromoteBytes}, {"demote", w.plannedDemoteBytes}}},
      {"moved_bytes", w.movedBytes},
      {"held_bytes", w.heldBytes},
      {"sources", sources}};
  if (auto r = f.restores.find(w.name); r != f.restores.end())
    out["restore"] = restoreJson(r->second);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> notMovedReasons(const policy::ArbiterStats& a) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [n, why] : {std::pair{a.skippedBudget, "budget"},
                               {a.skippedNoRoom, "no-room"},
                               {a.skippedQuota, "quota"},
                               {a.skippedNotAllowed, "not-allowed"},
                               {a.skippedNotCloser, "not-closer"},
                               {a.skippedFillNoRoom, "fill-no-room"},
                               {a.coolingDown, "cooling-down"},
                               {a.held, "held"}})
    if (n) out.emplace_back(why, n);
  return out;
}

std::string statusWithHold(const std::string& document, const OperatorHold& wanted) {
  json d = json::parse(document, nullptr, false);
  if (d.is_discarded() || !d.is_object()) return document;
  d["paused"] = wanted.all;
  if (!d.contains("workloads")) return d.dump();
  for (json& w : d["workloads"]) {
    const std::string name = w.value("name", "");
    auto asked = wanted.restore.find(name);
    if (asked == wanted.restore.end()) {
      w.erase("restore");
      w["state"] = wanted.all || wanted.workloads.count(name)
                       ? "paused"
                       : (d.value("dry_run", false) ? "dry-run" : "tiering");
      continue;
    }
    // A restore of an earlier request (asked again since the last tick) says nothing yet.
    if (w.contains("restore") && w["restore"].value("request", 0ull) != asked->second)
      w.erase("restore");
    const bool done = w.contains("restore") && w["restore"].value("done", false);
    w["state"] = done ? "restored" : "restoring";
  }
  return d.dump();
}

std::string statusDocument(const StatusFacts& f) {
  json doc = {{"pid", f.pid},
              {"version", f.version},
              {"config", f.configPath},
              {"tick", f.tick},
              {"last_tick_unix_seconds", f.lastTickUnix},
              {"interval_seconds", static_cast<double>(f.intervalNs) / 1e9},
              {"dry_run", f.dryRun},
              {"paused", f.hold.all},
              {"source", {{"name", f.source}, {"why", f.sourceWhy}}},
              {"conditions", f.conditions},
              {"metrics",
               {{"listen", f.metricsListen},
                {"exporter_pid", f.exporterPid},
                {"exporter_uid", f.exporterUid},
                {"serving", f.exporterServing}}},
              {"totals",
               {{"ticks", f.totals.ticks},
                {"promoted_bytes", f.totals.promotedBytes},
                {"demoted_bytes", f.totals.demotedBytes},
                {"samples", f.totals.samples},
                {"vanished_pids", f.totals.vanishedPids},
                {"source_errors", f.totals.sourceErrors}}}};
  json workloads = json::array();
  if (const TickReport* r = f.report) {
    doc["tiers"] = {{"fast", r->fastNodes}, {"slow", r->slowNodes}, {"method", r->topologyMethod}};
    doc["kernel_tiering"] = r->kernelTiering;
    doc["kernel_tiering_holds_tierd"] = r->kernelTieringHeld;
    doc["settled"] = r->settled;
    doc["last_tick"] = {
        {"samples", r->samples},
        {"planned_bytes", {{"promote", r->plannedPromoteBytes}, {"demote", r->plannedDemoteBytes}}},
        {"moved_bytes", {{"promote", r->promotedBytes}, {"demote", r->demotedBytes}}},
        {"problems", r->problems}};
    json left = json::object();
    for (const auto& [why, n] : notMovedReasons(r->arbiter))
      left[why] = n;
    doc["last_tick"]["not_moved"] = left;
    for (const WorkloadReport& w : r->workloads)
      workloads.push_back(workloadJson(f, w));
  }
  doc["workloads"] = workloads;
  return doc.dump();
}

Result<std::string> formatStatus(const std::string& text) {
  json d;
  try {
    d = json::parse(text);
  } catch (const json::exception& e) {
    return Error::input(std::string("not a status document: ") + e.what(), "status");
  }
  std::ostringstream o;
  try {
    o << "tierd " << d.value("version", "?") << ", pid " << d.value("pid", 0) << ", config "
      << d.value("config", "?") << "\n";
    const std::string source = d["source"].value("name", "");
    o << "tick " << d.value("tick", 0) << " (every " << d.value("interval_seconds", 0.0)
      << " s)\nhotness source: " << (source.empty() ? "none" : source) << " ("
      << d["source"].value("why", "") << ")\n";
    if (d.contains("metrics")) {
      const json& m = d["metrics"];
      const std::string listen = m.value("listen", "");
      o << "metrics: ";
      if (listen.empty())
        o << "off\n";
      else if (m.value("serving", false))
        o << "http://" << listen << "/metrics, served by pid " << m.value("exporter_pid", 0)
          << " (uid " << m.value("exporter_uid", -1) << ")\n";
      else
        o << "down: the exporter process (pid " << m.value("exporter_pid", 0)
          << ") ended; back when tierd restarts\n";
    }
    if (d.contains("tiers"))
      o << "tiers: fast " << d["tiers"]["fast"].dump() << ", slow " << d["tiers"]["slow"].dump()
        << " (" << d["tiers"].value("method", "") << ")\n";
    std::string state = d.value("dry_run", false)  ? "dry run: plans only, no page moves"
                        : d.value("paused", false) ? "paused: no page moves until `tierctl resume`"
                                                   : "moving pages";
    if (d.value("kernel_tiering_holds_tierd", false))
      state += "; held: the kernel tiers (" + d.value("kernel_tiering", "") + ")";
    if (d.value("settled", false)) state += "; placement settled";
    o << "state: " << state << "\n";
    for (const auto& c : d["conditions"])
      o << "warning: " << c.get<std::string>() << "\n";
    if (d.contains("last_tick")) {
      const json& t = d["last_tick"];
      o << "last tick: planned promote " << formatBytes(t["planned_bytes"]["promote"]) << " demote "
        << formatBytes(t["planned_bytes"]["demote"]) << "; moved promote "
        << formatBytes(t["moved_bytes"]["promote"]) << " demote "
        << formatBytes(t["moved_bytes"]["demote"]) << "; samples " << t.value("samples", 0);
      if (!t["not_moved"].empty()) {
        o << "; not moved:";
        for (const auto& [why, n] : t["not_moved"].items())
          o << " " << why << "=" << n.get<uint64_t>();
      }
      o << "\n";
      for (const auto& p : t["problems"])
        o << "problem: " << p.get<std::string>() << "\n";
    } else {
      o << "no tick finished yet\n";
    }
    const json& tot = d["totals"];
    o << "since start: promoted " << formatBytes(tot["promoted_bytes"]) << ", demoted "
      << formatBytes(tot["demoted_bytes"]) << ", " << tot.value("samples", 0) << " samples\n";
    char row[512];
    std::snprintf(row, sizeof row, "\n%-16s %-9s %5s %10s %10s %10s %10s %10s %10s %10s\n",
                  "WORKLOAD", "STATE", "PIDS", "FAST", "SLOW", "HOT-FAST", "HOT-SLOW", "PLANNED",
                  "MOVED", "HELD");
    o << row;
    for (const auto& w : d["workloads"]) {
      std::snprintf(row, sizeof row, "%-16s %-9s %5llu %10s %10s %10s %10s %10s %10s %10s\n",
                    w.value("name", "").c_str(), w.value("state", "").c_str(),
                    static_cast<unsigned long long>(w.value("pids", 0)),
                    formatBytes(w["located_bytes"]["fast"]).c_str(),
                    formatBytes(w["located_bytes"]["slow"]).c_str(),
                    formatBytes(w["hot_bytes"]["fast"]).c_str(),
                    formatBytes(w["hot_bytes"]["slow"]).c_str(),
                    formatBytes(w["planned_bytes"]["promote"].get<uint64_t>() +
                                w["planned_bytes"]["demote"].get<uint64_t>())
                        .c_str(),
                    formatBytes(w["moved_bytes"]).c_str(), formatBytes(w["held_bytes"]).c_str());
      o << row;
    }
    for (const auto& w : d["workloads"]) {
      for (const auto& s : w["sources"])
        o << "  " << w.value("name", "") << ": pid " << s.value("pid", 0) << " "
          << s.value("source", "") << " " << s.value("state", "") << "\n";
      if (!w.contains("restore")) continue;
      const json& r = w["restore"];
      o << "restore " << w.value("name", "") << ": "
        << (r.value("done", false) ? "done" : "in progress") << ", moved back "
        << formatBytes(r["moved_bytes"]) << " in " << r.value("ticks", 0)
        << (r.value("ticks", 0) == 1 ? " tick" : " ticks");
      if (r.value("failed_pages", 0))
        o << ", " << r.value("failed_pages", 0) << " pages could not move";
      if (r.value("blocked_bytes", 0))
        o << ", " << formatBytes(r["blocked_bytes"])
          << " left: its direction is off (migration.max_*_mib_per_s = 0)";
      if (r.value("skipped_mappings", 0))
        o << ", " << r.value("skipped_mappings", 0) << " mappings left (interleaved or unreadable)";
      o << "; `tierctl resume --workload " << w.value("name", "") << "` tiers it again\n";
    }
  } catch (const json::exception& e) {
    return Error::input(std::string("not a status document: ") + e.what(), "status");
  }
  return o.str();
}

}  // namespace tierd::daemon

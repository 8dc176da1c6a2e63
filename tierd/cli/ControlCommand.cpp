// `tierctl status | pause | resume | restore`: requests to the running tierd through its control
// socket (tierd/daemon/Control.h), answered with JSON.
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/daemon/Control.h"
#include "tierd/daemon/ControlStatus.h"

namespace tierd::cli {
namespace {

using daemon::ControlRequest;

const OptionSpec kSocketOption{"socket", true,
                               "the control socket (default /run/tierd/control.sock, "
                               "daemon.control_socket)",
                               "PATH"};

std::string socketOf(const ParsedArgs& a) {
  return a.get("socket").value_or("/run/tierd/control.sock");
}

// Sends `r`; prints the answer's message (or error) and returns the exit code. `answer` gets
// the parsed answer when it is one.
int call(const CommandSpec& spec, const std::string& socket, const ControlRequest& r,
         nlohmann::json* answer = nullptr) {
  auto reply = daemon::controlCall(socket, r);
  if (!reply) return fail(spec, reply.error(), 1);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(reply.value());
  } catch (const nlohmann::json::exception& e) {
    std::cerr << spec.name << ": not an answer from tierd: " << e.what() << "\n";
    return 1;
  }
  if (!j.value("ok", false)) {
    std::cerr << spec.name << ": " << j.value("error", "refused") << "\n";
    return 1;
  }
  if (answer) *answer = std::move(j);
  return 0;
}

int simpleCommand(const std::string& verb, ControlRequest::Verb v, const std::string& usage,
                  bool needsWorkload, const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {"tierctl " + verb,
                            usage,
                            {{"workload", true,
                              needsWorkload ? "the workload (its [[workload]] name)"
                                            : "one workload (its [[workload]] name); default: all",
                              "NAME"},
                             kSocketOption}};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  ControlRequest r;
  r.verb = v;
  r.workload = parsed->get("workload").value_or("");
  if (needsWorkload && r.workload.empty()) {
    std::cerr << spec.name << ": say which workload: --workload NAME\n";
    return 2;
  }
  nlohmann::json answer;
  if (int rc = call(spec, socketOf(*parsed), r, &answer); rc != 0) return rc;
  std::cout << answer.value("message", "") << "\n";
  return 0;
}

}  // namespace

int statusCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl status",
      "usage: tierctl status [--json] [--socket PATH]\n\nWhat the running tierd saw and did at "
      "its last tick: its hotness source and why, the tiers, whether it moves pages (paused, dry "
      "run, held by the kernel's own tiering), the plan and the moves, why planned pages were "
      "not moved, and per workload its processes, located and hot bytes per tier, planned, "
      "moved and held bytes, each process's sampler state and any restore. Asked through "
      "tierd's control socket (root only).\n",
      {{"json", false, "print the status document (fields: docs/service.md)"}, kSocketOption}};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  nlohmann::json answer;
  if (int rc = call(spec, socketOf(*parsed), {ControlRequest::Verb::Status, ""}, &answer); rc != 0)
    return rc;
  const std::string doc = answer["status"].dump();
  if (parsed->has("json")) {
    std::cout << doc << "\n";
    return 0;
  }
  auto text = daemon::formatStatus(doc);
  if (!text) return fail(spec, text.error(), 1);
  std::cout << text.value();
  return 0;
}

int pauseCommand(const std::vector<std::string>& args, size_t begin) {
  return simpleCommand("pause", ControlRequest::Verb::Pause,
                       "usage: tierctl pause [--workload NAME] [--socket PATH]\n\nThe running "
                       "tierd moves no pages from its next tick (of one workload, or of all) "
                       "until `tierctl resume`; sampling, plans and metrics go on. A restart "
                       "of tierd resumes.\n",
                       false, args, begin);
}

int resumeCommand(const std::vector<std::string>& args, size_t begin) {
  return simpleCommand("resume", ControlRequest::Verb::Resume,
                       "usage: tierctl resume [--workload NAME] [--socket PATH]\n\nUndoes "
                       "`tierctl pause` and `tierctl restore`: without --workload every hold "
                       "ends; with it, that workload's.\n",
                       false, args, begin);
}

int restoreCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl restore",
      "usage: tierctl restore --workload NAME [--wait DURATION] [--socket PATH]\n\nThe rollback: "
      "the running tierd holds the workload (none of its pages move by its plans) and moves "
      "its pages back, per 2 MiB region, to where the memory policy of their mapping puts "
      "them (/proc/PID/numa_maps: default or local to the task's home nodes, bind and prefer "
      "to their nodes; interleaved mappings stay), a batch a tick within the migration rate "
      "limits. --wait polls the status until the restore is done (exit 1 when it is not "
      "done in time). `tierctl resume --workload NAME` tiers it again.\n",
      {{"workload", true, "the workload (its [[workload]] name)", "NAME"},
       {"wait", true, "wait this long (\"60s\") for the restore to finish", "DURATION"},
       kSocketOption}};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  const std::string name = parsed->get("workload").value_or("");
  if (name.empty()) {
    std::cerr << spec.name << ": say which workload: --workload NAME\n";
    return 2;
  }
  uint64_t waitNs = 0;
  if (auto w = parsed->get("wait")) {
    auto n = parseDurationOption(*w, 86400ull * 1'000'000'000, "--wait");
    if (!n) return fail(spec, n.error(), 2);
    waitNs = *n;
  }
  const std::string socket = socketOf(*parsed);
  nlohmann::json answer;
  if (int rc = call(spec, socket, {ControlRequest::Verb::Restore, name}, &answer); rc != 0)
    return rc;
  std::cout << answer.value("message", "") << "\n";
  // The status of this request (its number): an earlier restore's "done" does not count.
  const uint64_t request = answer.value("request", uint64_t{0});
  const uint64_t polls = waitNs ? std::max<uint64_t>(1, waitNs / 250'000'000) : 0;
  for (uint64_t i = 0; i < polls; ++i) {
    ::usleep(250'000);
    nlohmann::json st;
    if (int rc = call(spec, socket, {ControlRequest::Verb::Status, ""}, &st); rc != 0) return rc;
    for (const auto& w : st["status"]["workloads"]) {
      if (w.value("name", "") != name || !w.contains("restore")) continue;
      const auto& r = w["restore"];
      if (r.value("request", uint64_t{0}) != request || !r.value("done", false)) continue;
      std::cout << "restore of '" << name << "' done: " << r["moved_bytes"].get<uint64_t>()
                << " bytes moved back in " << r.value("ticks", 0)
                << (r.value("ticks", 0) == 1 ? " tick, " : " ticks, ") << r.value("failed_pages", 0)
                << " pages could not move, " << r.value("skipped_mappings", 0)
                << " mappings left\n";
      return 0;
    }
  }
  if (waitNs) {
    std::cerr << spec.name << ": the restore of '" << name << "' is not done after "
              << *parsed->get("wait") << " (tierctl status shows how far it is)\n";
    return 1;
  }
  return 0;
}

}  // namespace tierd::cli

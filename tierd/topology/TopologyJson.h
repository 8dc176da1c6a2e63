#pragma once
/// \file
/// The stable JSON form of a Topology (documented in docs/topology.md, "schema": 1), shared by
/// `tierctl topology --json` and anything else that reports the topology.

#include <nlohmann/json.hpp>

#include "tierd/topology/Topology.h"

namespace tierd::topology {

/// JSON schema version of topologyToJson; bumped on any incompatible change.
inline constexpr int kTopologyJsonSchema = 1;

/// Converts a topology to its documented JSON object (sizes in bytes, latencies in ns,
/// bandwidths in MB/s; absent kernel facts are null).
nlohmann::ordered_json topologyToJson(const Topology& topo);

/// Renders the human table printed by `tierctl topology`.
std::string topologyToText(const Topology& topo);

}  // namespace tierd::topology

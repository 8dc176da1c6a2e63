#include <doctest/doctest.h>

#include "tierd/topology/Topology.h"

using namespace tierd;

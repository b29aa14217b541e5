// GraphAccumulator on synthetic executions (labelled as such: made-up graph ids, nodes and times,
// so each number below can be worked out by hand).
#include <cstdint>
#include <vector>

#include "catch.h"
#include "cutriage/triage/graphs.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_graphs {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif
using cutriage::triage::GraphAccumulator;
using cutriage::triage::GraphKernel;

namespace {
GraphKernel node(uint32_t graph, uint64_t launch, uint64_t node_id, uint64_t family, uint64_t start, uint64_t end) {
  GraphKernel k;
  k.graph_id = graph;
  k.launch = launch;
  k.node_id = node_id;
  k.family = family;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}
}  // namespace

TEST_CASE("graphs: replays, span, busy time and the idle time between nodes (synthetic)", "[graphs]") {
  GraphAccumulator acc;
  // Two replays of graph 7, three nodes each: A [0,10), B [15,40), A again as node 3 [40,50).
  for (uint64_t r = 0; r < 2; ++r) {
    const uint64_t base = 1000 * r;
    acc.add(node(7, 100 + r, 1, /*family=*/11, base + 0, base + 10));
    acc.add(node(7, 100 + r, 2, /*family=*/12, base + 15, base + 40));
    acc.add(node(7, 100 + r, 3, /*family=*/11, base + 40, base + 50));
  }
  const auto graphs = acc.summary();
  REQUIRE(graphs.size() == 1);
  const auto& g = graphs[0];
  CHECK(g.graph_id == 7);
  CHECK(g.replays == 2);
  CHECK(g.span_ns == Approx(100));         // 50 per replay
  CHECK(g.kernel_busy_ns == Approx(90));   // 45 per replay
  CHECK(g.idle_between_nodes_ns() == Approx(10));
  CHECK(g.mean_replay_ns() == Approx(50));
  CHECK(g.kernel_nodes == 3);
  CHECK(g.kernel_executions == 6);
  REQUIRE(g.families.size() == 2);
  CHECK(g.families[0].family == 12);  // 50 ns in all, before family 11's 40
  CHECK(g.families[0].total_ns == Approx(50));
  CHECK(g.families[1].family == 11);
  CHECK(g.families[1].executions == 4);
  CHECK(g.families[1].node_ids == std::vector<uint64_t>{1, 3});
}

TEST_CASE("graphs: overlapping nodes count once in the busy time (synthetic)", "[graphs]") {
  GraphAccumulator acc;
  acc.add(node(3, 1, 1, 1, 0, 100));
  acc.add(node(3, 1, 2, 2, 50, 120));  // a branch of the graph, overlapping the first node
  acc.add(node(3, 1, 3, 3, 200, 210));
  const auto g = acc.summary().at(0);
  CHECK(g.span_ns == Approx(210));
  CHECK(g.kernel_busy_ns == Approx(130));
  CHECK(g.idle_between_nodes_ns() == Approx(80));
}

TEST_CASE("graphs: replays whose records interleave are kept apart, old ones close (synthetic)", "[graphs]") {
  GraphAccumulator acc;
  // Launch 1 and 2 interleaved (two streams), then launches 3..8 one after the other.
  acc.add(node(5, 1, 1, 1, 0, 10));
  acc.add(node(5, 2, 1, 1, 5, 20));
  acc.add(node(5, 1, 2, 1, 10, 30));
  acc.add(node(5, 2, 2, 1, 20, 40));
  for (uint64_t l = 3; l <= 8; ++l) acc.add(node(5, l, 1, 1, 100 * l, 100 * l + 10));
  const auto g = acc.summary().at(0);
  CHECK(g.replays == 8);
  CHECK(g.span_ns == Approx(30 + 35 + 6 * 10));
  // summary() closes the open replays on a copy: adding more goes on counting.
  acc.add(node(5, 9, 1, 1, 1000, 1010));
  CHECK(acc.summary().at(0).replays == 9);
}

TEST_CASE("graphs: not graph kernels, and graphs beyond the bound, are left out (synthetic)", "[graphs]") {
  GraphAccumulator acc;
  acc.add(node(0, 1, 0, 1, 0, 10));  // a direct launch
  CHECK(acc.empty());
  for (uint32_t g = 1; g <= GraphAccumulator::kMaxGraphs + 2; ++g) acc.add(node(g, g, 1, 1, 0, 10));
  CHECK(acc.summary().size() == GraphAccumulator::kMaxGraphs);
  CHECK(acc.untracked_executions() == 2);
}

TEST_CASE("graphs: the graph with the most kernel time comes first (synthetic)", "[graphs]") {
  GraphAccumulator acc;
  acc.add(node(1, 1, 1, 1, 0, 10));
  acc.add(node(2, 2, 1, 2, 0, 50));
  const auto graphs = acc.summary();
  REQUIRE(graphs.size() == 2);
  CHECK(graphs[0].graph_id == 2);
  CHECK(graphs[1].graph_id == 1);
}

TEST_CASE("graphs: launches that share one launch id count as separate replays (synthetic)", "[graphs]") {
  // Seen on the H200 under always-on (tests/data/graphs/graph_mlp-always-on-repeated-ids.txt):
  // CUPTI gave many graph launches one correlation id. Three launches of a two-node graph, 1 ms
  // apart, all under launch id 25849: each is its own 50 ns replay, not one replay of 2.05 ms.
  GraphAccumulator acc;
  for (uint64_t r = 0; r < 3; ++r) {
    const uint64_t base = 1'000'000 * r;
    acc.add(node(2, 25849, 1, 11, base + 0, base + 20));
    acc.add(node(2, 25849, 2, 12, base + 20, base + 50));
  }
  const auto graphs = acc.summary();
  REQUIRE(graphs.size() == 1);
  CHECK(graphs[0].replays == 3);
  CHECK(graphs[0].mean_replay_ns() == Approx(50));
  CHECK(graphs[0].kernel_executions == 6);
  CHECK(acc.repeated_launch_ids() == 2);  // the 2nd and 3rd launch's first node
  // A node id of 0 (unknown) never splits a replay.
  GraphAccumulator unknown;
  unknown.add(node(2, 9, 0, 11, 0, 20));
  unknown.add(node(2, 9, 0, 12, 20, 50));
  CHECK(unknown.summary()[0].replays == 1);
  CHECK(unknown.repeated_launch_ids() == 0);
}

}  // namespace test_graphs

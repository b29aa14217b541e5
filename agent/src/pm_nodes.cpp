#include "pm_nodes.h"

#include <algorithm>
#include <cmath>

namespace cutriage::agent {

const std::vector<std::string>& pm_node_metrics() {
  // tests/data/graphs/pm-metrics-gh100.txt, section 6: built greedily as one PM config on GH100
  // (1 pass, config image 6168 B). Every name is one pass alone; together still one.
  // Never destroyed: the agent's exit handler attributes samples after static destructors have run
  // (a destroyed table lost its first row at the end of an H200 run: sm__throughput vanished from
  // every node-sampled record's last revision).
  static const auto* const metrics = new std::vector<std::string>{
      "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
      "TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed",
      "SM_A.TriageCompute.l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
      "sm__cycles_elapsed.avg.per_second",
      "gpu__time_duration.sum",
      "smsp__issue_active.sum",
      "lts__t_sectors.sum",
      "gr__cycles_active.sum.pct_of_peak_sustained_elapsed",
  };
  return *metrics;
}

const std::vector<PmMapping>& pm_rule_mapping() {
  // Why each PM value stands for the rules' metric: the H200 probe (tests/data/graphs/pm-probe.txt,
  // way pm_then_rp) compared per-node PM means over samples wholly inside a node with the range
  // profiler's per-kernel values (kernel replay, the rules' own names) on the same kernels.
  // Left out on purpose, though sampled:
  //  * LTS.TriageCompute.lts__throughput: another definition (37 where the rules' lts__throughput
  //    reads 66 on the DRAM-bound nodes); no L2 value reaches the rules;
  //  * l1tex__data_pipe_lsu_wavefronts: no range-profiler reference under the rules' names in the
  //    probe;
  //  * sm__inst_executed_realtime as smsp__issue_active.avg.pct_of_peak_sustained_active: close on
  //    the probe's nodes, but PM's is per elapsed cycle and that one per active cycle, so it would
  //    read low on a kernel that leaves SMs idle, and d2.issue_starvation fires on a low value;
  //  * tpc__warps_active_realtime, even over sm__cycles_active: not the achieved occupancy
  //    (tests/data/graphs/pm-probe-occupancy.txt: 11.5 / 90.8 on the DRAM-bound node, 49.4 / 58.2
  //    on the FMA one, 6.8 / 94.8 on the L2-resident one), so Decision 3's quadrant stays
  //    "not evaluated" on PM samples;
  //  * the .sum counters and gpu__time_duration.sum: per sample (a 5 us window), not per kernel.
  static const auto* const mapping = new std::vector<PmMapping>{
      // SM throughput: PM 14.0 / range profiler 13.9 (DRAM-bound node), 93.9 / 93.5 (FMA),
      // 96.0 / 93.6 (FP64), 95.5 / 93.5 (tensor), 45.6 / 45.7 (L2-resident).
      {"TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed",
       "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      // DRAM throughput: the same metric in both profilers; 63.5 / 61.3 on the DRAM-bound node.
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      // L1 throughput: 22.7-23.0 / 22.5 (DRAM-bound nodes), 17.1 / 16.9 (L2-resident), 0.06 / 0.06 (FMA).
      {"SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
       "l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      // Pipes, against the rules' pct_of_peak_sustained_active names: tensor 95.5 / 95.3,
      // FP64 96.0 / 96.5, FMA (PM counts FMA instructions, the rules the FMA pipe's cycles) 83.4 / 83.7.
      {"TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%"},
      {"TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
       "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", "%"},
      {"TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed",
       "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "%"},
      // ALU pipe and instruction issue, from the H100 probe of 2026-12-06
      // (tests/data/graphs/pm-probe-alu-issue.txt; PM means over the nodes' pure samples against
      // kernel replay of the same kernels). ALU: 11.5 / 11.6 (add), 14.8 / 15.4 (stream), 15.7 / 15.8
      // (FMA), 3.1 / 3.1 (FP64), 2.2 / 2.4 (tensor), 45.3 / 47.8 (L2-resident); like the FMA row, PM's
      // is per elapsed cycle, so a kernel that leaves SMs idle reads a little low (no pipe claimed
      // too easily). Issue, both per elapsed cycle: 10.0 / 9.7, 14.3 / 14.1, 94.0 / 93.2, 58.8 /
      // 57.0, 26.1 / 25.6, 44.9 / 43.4. The driver's 22 us memset node, with few pure samples,
      // read 38.7 / 35.1 and 47.9 / 39.3.
      {"TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed",
       "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", "%"},
      {"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
       "sm__inst_issued.avg.pct_of_peak_sustained_elapsed", "%"},
      // The SM clock over the sample (Decision 0's profiled clock): the same metric.
      {"sm__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second", "hz"},
  };
  return *mapping;
}

namespace {

bool inside(const collectors::PmSample& s, const NodeExecution& e) {
  return s.start_ns >= e.start_ns && s.end_ns <= e.end_ns && s.end_ns > s.start_ns;
}

}  // namespace

std::map<uint64_t, FamilyPmValues> attribute_pm_samples(const collectors::PmSampleBatch& batch,
                                                         const std::vector<NodeExecution>& executions) {
  std::map<uint64_t, FamilyPmValues> out;
  for (const NodeExecution& e : executions) ++out[e.family].executions;
  // Column of each mapped metric in the batch.
  struct Column {
    size_t index;
    const PmMapping* mapping;
  };
  std::vector<Column> columns;
  for (const PmMapping& m : pm_rule_mapping()) {
    auto it = std::find(batch.metrics.begin(), batch.metrics.end(), m.pm_name);
    if (it != batch.metrics.end()) columns.push_back({static_cast<size_t>(it - batch.metrics.begin()), &m});
  }
  std::vector<NodeExecution> sorted = executions;
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeExecution& a, const NodeExecution& b) { return a.start_ns < b.start_ns; });
  struct Sums {
    std::vector<double> sum;
    std::vector<uint32_t> n;
  };
  std::map<uint64_t, Sums> sums;
  for (const collectors::PmSample& s : batch.samples) {
    // The executions that touch the sample start before its end. One of them must hold it wholly;
    // any other family's execution that overlaps it at all (a concurrent kernel, one starting
    // before this one ends) makes it a mixture of the two, and it is dropped.
    auto upper = std::lower_bound(sorted.begin(), sorted.end(), s.end_ns,
                                  [](const NodeExecution& e, uint64_t t) { return e.start_ns < t; });
    const NodeExecution* owner = nullptr;
    for (auto it = sorted.begin(); owner == nullptr && it != upper; ++it) {
      if (inside(s, *it)) owner = &*it;
    }
    bool ambiguous = false;
    for (auto it = sorted.begin(); owner != nullptr && it != upper; ++it) {
      const bool overlaps = it->start_ns < s.end_ns && it->end_ns > s.start_ns;
      if (overlaps && it->family != owner->family) ambiguous = true;
    }
    if (owner == nullptr || ambiguous) continue;
    FamilyPmValues& f = out[owner->family];
    ++f.samples;
    Sums& acc = sums[owner->family];
    acc.sum.resize(columns.size(), 0.0);
    acc.n.resize(columns.size(), 0);
    for (size_t c = 0; c < columns.size(); ++c) {
      if (columns[c].index >= s.values.size()) continue;
      const double v = s.values[columns[c].index];
      if (!std::isfinite(v)) continue;
      acc.sum[c] += v;
      ++acc.n[c];
    }
  }
  for (auto& [family, acc] : sums) {
    FamilyPmValues& f = out[family];
    for (size_t c = 0; c < columns.size(); ++c) {
      if (acc.n[c] == 0) continue;
      f.metrics.set(std::string(columns[c].mapping->rule_name), acc.sum[c] / acc.n[c],
                    std::string(columns[c].mapping->unit));
    }
  }
  return out;
}

uint32_t samples_in_launch(const collectors::PmSampleBatch& batch, const std::vector<NodeExecution>& executions) {
  if (executions.empty()) return 0;
  uint64_t first = UINT64_MAX;
  uint64_t last = 0;
  for (const NodeExecution& e : executions) {
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
  }
  uint32_t n = 0;
  for (const collectors::PmSample& s : batch.samples) {
    if (s.end_ns > first && s.start_ns < last) ++n;
  }
  return n;
}

PmPlan plan_pm_sampling(double replay_ns, uint32_t max_samples) {
  PmPlan plan;
  plan.max_samples = std::max<uint32_t>(max_samples, 64);
  if (!(replay_ns > 0)) return plan;
  // Half the image for the replay itself; the rest for the wait between Start and the launch
  // running (work queued before it) and the end.
  const double fit = static_cast<double>(plan.max_samples) / 2;
  const double needed = replay_ns / static_cast<double>(plan.interval_ns);
  if (needed > fit) plan.interval_ns = static_cast<uint64_t>(std::ceil(replay_ns / fit / 1000.0)) * 1000;
  return plan;
}

}  // namespace cutriage::agent

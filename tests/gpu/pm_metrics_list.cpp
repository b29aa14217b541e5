// Which of cutriage's counters CUPTI's PM sampling (cupti_pmsampling.h) can collect on a chip, and
// how many fit one pass. Offline: the Profiler Host API only (CUPTI_PROFILER_TYPE_PM_SAMPLING),
// no GPU, no driver. Evidence for docs/graphs.md ("PM sampling per node (probe)"); the output is
// committed as tests/data/graphs/pm-metrics-gh100.txt.
//
//   g++ -std=c++17 -O1 -I/usr/local/cuda-13.0/include tests/gpu/pm_metrics_list.cpp
//       -L/usr/local/cuda-13.0/lib64 -lcupti -lnvperf_host -Wl,-rpath,/usr/local/cuda-13.0/lib64
//       -o /tmp/pm_metrics_list
//   /tmp/pm_metrics_list GH100 RULES_FILE     (RULES_FILE: "DECISION NAME" per line, from
//                                              tests/gpu/rule_counters.cpp; "-" for none)
//
// Sections: what needs what (host API without cuptiProfilerInitialize), hardware metrics per pass,
// base metrics of each type for PM sampling and for the range profiler, every rule counter checked
// alone (accepted? passes?) with its PM-sampling stand-ins where it is not collectable, candidate
// one-pass sets for the per-node probe, and the full PM-sampling base-metric list.
//
// A rejected name poisons later ConfigAddMetrics calls on the same host object (shared notes), so
// every check builds a fresh host object.
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string chip = "GH100";

const char* result_string(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "?";
}

const char* type_name(CUpti_MetricType t) {
  switch (t) {
    case CUPTI_METRIC_TYPE_COUNTER: return "counter";
    case CUPTI_METRIC_TYPE_RATIO: return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT: return "throughput";
    default: return "?";
  }
}

struct Host {
  CUpti_Profiler_Host_Object* obj = nullptr;
  CUptiResult init = CUPTI_SUCCESS;
  explicit Host(CUpti_ProfilerType type) {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = type;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = nullptr;
    init = cuptiProfilerHostInitialize(&p);
    obj = init == CUPTI_SUCCESS ? p.pHostObject : nullptr;
  }
  ~Host() {
    if (obj == nullptr) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = obj;
    cuptiProfilerHostDeinitialize(&p);
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
};

// A config built for `names` on a fresh host object: what CUPTI said at each step.
struct Config {
  CUptiResult add = CUPTI_SUCCESS, image = CUPTI_SUCCESS, passes_result = CUPTI_SUCCESS;
  size_t image_size = 0;
  size_t passes = 0;
  bool ok() const { return add == CUPTI_SUCCESS && image == CUPTI_SUCCESS && passes_result == CUPTI_SUCCESS; }
  std::string describe() const {
    char b[256];
    if (add != CUPTI_SUCCESS) {
      std::snprintf(b, sizeof b, "rejected by ConfigAddMetrics: %s", result_string(add));
    } else if (image != CUPTI_SUCCESS) {
      std::snprintf(b, sizeof b, "GetConfigImage: %s", result_string(image));
    } else if (passes_result != CUPTI_SUCCESS) {
      std::snprintf(b, sizeof b, "GetNumOfPasses: %s", result_string(passes_result));
    } else {
      std::snprintf(b, sizeof b, "%zu pass%s (image %zu B)", passes, passes == 1 ? "" : "es", image_size);
    }
    return b;
  }
};

Config build(CUpti_ProfilerType type, const std::vector<std::string>& names) {
  Config c;
  Host h(type);
  if (h.obj == nullptr) {
    c.add = h.init;
    return c;
  }
  std::vector<const char*> cn;
  for (const auto& n : names) cn.push_back(n.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params a{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  a.pHostObject = h.obj;
  a.ppMetricNames = cn.data();
  a.numMetrics = cn.size();
  c.add = cuptiProfilerHostConfigAddMetrics(&a);
  if (c.add != CUPTI_SUCCESS) return c;
  CUpti_Profiler_Host_GetConfigImageSize_Params s{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  s.pHostObject = h.obj;
  c.image = cuptiProfilerHostGetConfigImageSize(&s);
  if (c.image != CUPTI_SUCCESS) return c;
  std::vector<uint8_t> img(s.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params g{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  g.pHostObject = h.obj;
  g.configImageSize = img.size();
  g.pConfigImage = img.data();
  c.image = cuptiProfilerHostGetConfigImage(&g);
  if (c.image != CUPTI_SUCCESS) return c;
  c.image_size = img.size();
  CUpti_Profiler_Host_GetNumOfPasses_Params p{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  p.configImageSize = img.size();
  p.pConfigImage = img.data();
  c.passes_result = cuptiProfilerHostGetNumOfPasses(&p);
  c.passes = p.numOfPasses;
  return c;
}

std::vector<std::pair<std::string, CUpti_MetricType>> base_metrics(const Host& h) {
  std::vector<std::pair<std::string, CUpti_MetricType>> out;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; ++t) {
    CUpti_Profiler_Host_GetBaseMetrics_Params p{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    p.pHostObject = h.obj;
    p.metricType = static_cast<CUpti_MetricType>(t);
    const CUptiResult r = cuptiProfilerHostGetBaseMetrics(&p);
    if (r != CUPTI_SUCCESS) {
      std::printf("  GetBaseMetrics(%s): %s\n", type_name(p.metricType), result_string(r));
      continue;
    }
    for (size_t i = 0; i < p.numMetrics; ++i) out.emplace_back(p.ppMetricNames[i], p.metricType);
  }
  return out;
}

std::vector<std::string> sub_metrics(const Host& h, const std::string& base, CUpti_MetricType type) {
  CUpti_Profiler_Host_GetSubMetrics_Params p{CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE};
  p.pHostObject = h.obj;
  p.metricType = type;
  p.pMetricName = base.c_str();
  std::vector<std::string> out;
  if (cuptiProfilerHostGetSubMetrics(&p) != CUPTI_SUCCESS) return out;
  for (size_t i = 0; i < p.numOfSubmetrics; ++i) out.emplace_back(p.ppSubMetrics[i]);
  return out;
}

// The base of a full name: up to the first '.' after the last "__" (names may carry a dotted
// group prefix, e.g. "CTC.TriageCompute.ctc__rx_bytes").
std::string base_of(const std::string& name) {
  const size_t us = name.rfind("__");
  const size_t dot = name.find('.', us == std::string::npos ? 0 : us);
  return dot == std::string::npos ? name : name.substr(0, dot);
}
std::string suffix_of(const std::string& name) {
  const std::string b = base_of(name);
  return name.substr(b.size());
}
// A base metric's short name (the group prefix removed).
std::string short_base(const std::string& base) {
  const size_t us = base.rfind("__");
  const size_t dot = base.rfind('.', us);
  return dot == std::string::npos || us == std::string::npos ? base : base.substr(dot + 1);
}

struct RuleCounter {
  std::string decisions;  // "D2,D4"
  std::string name;
};
struct Breakdown {
  std::string metric;  // base name, e.g. sm__throughput
  std::vector<std::string> parts, unreachable;
};

void read_rules(const char* path, std::vector<RuleCounter>& rules, std::vector<Breakdown>& breakdowns) {
  if (std::strcmp(path, "-") == 0) return;
  std::ifstream in(path);
  std::map<std::string, std::string> by_name;
  std::vector<std::string> order;
  std::string d, n;
  while (in >> d >> n) {
    if (d.rfind("B:", 0) == 0 || d.rfind("U:", 0) == 0) {
      const std::string metric = d.substr(2);
      auto it = std::find_if(breakdowns.begin(), breakdowns.end(), [&](const Breakdown& b) { return b.metric == metric; });
      if (it == breakdowns.end()) it = breakdowns.insert(breakdowns.end(), Breakdown{metric, {}, {}});
      (d[0] == 'B' ? it->parts : it->unreachable).push_back(n);
      continue;
    }
    if (!by_name.count(n)) order.push_back(n);
    std::string& ds = by_name[n];
    if (ds.find(d) == std::string::npos) ds += (ds.empty() ? "" : ",") + d;
  }
  for (const auto& name : order) rules.push_back({by_name[name], name});
}

// Short base name -> the names GetBaseMetrics lists for it (plain, and with a group prefix such
// as "TPC.TriageCompute."): filled in main.
std::map<std::string, std::vector<std::string>> g_listed;

// Candidate PM-sampling stand-ins for a range-profiler name: the same base with "_realtime"
// (PM sampling's per-sample counters), and for a few names the equivalents NVIDIA's PM sampling
// documentation lists.
std::vector<std::string> stand_ins(const std::string& name) {
  const std::string base = base_of(name), suffix = suffix_of(name);
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    // Every listing of the base: plain and with a group prefix ("TPC.TriageCompute.").
    const std::string b = base_of(s), sfx = s.substr(b.size());
    std::vector<std::string> forms = {s};
    auto it = g_listed.find(short_base(b));
    if (it != g_listed.end()) {
      for (const std::string& listed : it->second) forms.push_back(listed + sfx);
    }
    for (const std::string& f : forms) {
      if (f != name && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
  };
  add(name);
  add(base + "_realtime" + suffix);
  // ".avg.pct_of_peak_sustained_active" (per active cycle) has no meaning per sample; elapsed does.
  const std::string active = ".pct_of_peak_sustained_active";
  if (suffix.size() > active.size() && suffix.compare(suffix.size() - active.size(), active.size(), active) == 0) {
    const std::string elapsed = suffix.substr(0, suffix.size() - active.size()) + ".pct_of_peak_sustained_elapsed";
    add(base + elapsed);
    add(base + "_realtime" + elapsed);
  }
  if (base == "sm__inst_executed" || base == "smsp__inst_executed" || base == "sm__inst_issued" ||
      base == "smsp__inst_issued" || base == "sm__issue_active" || base == "smsp__issue_active") {
    add("sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed");
    add("sm__inst_executed_realtime.sum");
  }
  if (base == "sm__throughput") add("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  if (base == "dram__throughput" || base == "gpu__dram_throughput" || base == "dram__bytes") {
    add("dram__throughput.avg.pct_of_peak_sustained_elapsed");
    add("dramc__read_throughput.avg.pct_of_peak_sustained_elapsed");
    add("dramc__write_throughput.avg.pct_of_peak_sustained_elapsed");
    add("dram__bytes_read.sum");
    add("dram__bytes_write.sum");
  }
  if (base == "sm__cycles_active" || base == "smsp__cycles_active") {
    add("sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  }
  if (base == "sm__warps_active" || base == "smsp__warps_active") {
    add("sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed");
    add("tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed");
  }
  return out;
}

// Full names to try for a metric of `type` with no suffix given.
std::vector<std::string> default_suffixes(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER: return {".sum", ".avg.pct_of_peak_sustained_elapsed"};
    case CUPTI_METRIC_TYPE_RATIO: return {".ratio"};
    default: return {".avg.pct_of_peak_sustained_elapsed"};
  }
}

std::string description(const Host& h, const std::string& name) {
  CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  p.pHostObject = h.obj;
  p.pMetricName = name.c_str();
  if (cuptiProfilerHostGetMetricProperties(&p) != CUPTI_SUCCESS) return "?";
  std::string d = p.pDescription ? p.pDescription : "";
  return d + " [" + (p.pHwUnit ? p.pHwUnit : "") + ", " + (p.pDimUnit ? p.pDimUnit : "") + "]";
}

// First fit of `names` (each one pass alone) into one-pass PM configs.
std::vector<std::vector<std::string>> pack_one_pass(const std::vector<std::string>& names) {
  std::vector<std::vector<std::string>> groups;
  for (const std::string& n : names) {
    bool placed = false;
    for (auto& g : groups) {
      std::vector<std::string> trial = g;
      trial.push_back(n);
      const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, trial);
      if (c.ok() && c.passes == 1) {
        g = std::move(trial);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({n});
  }
  return groups;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CHIP [RULES_FILE|-]\n", argv[0]);
    return 2;
  }
  chip = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<RuleCounter> rules;
  std::vector<Breakdown> breakdowns;
  read_rules(argc > 2 ? argv[2] : "-", rules, breakdowns);

  uint32_t version = 0;
  cuptiGetVersion(&version);
  std::printf("# CUPTI API version %u, chip %s\n\n", version, chip.c_str());

  // --- 1. what the host API needs -----------------------------------------------------------
  std::printf("## 1. Setup\n");
  Host pm(CUPTI_PROFILER_TYPE_PM_SAMPLING);
  std::printf("cuptiProfilerHostInitialize(PM_SAMPLING, \"%s\", no counter-availability image), before any "
              "cuptiProfilerInitialize: %s\n",
              chip.c_str(), result_string(pm.init));
  if (pm.obj == nullptr) return 1;
  Host rp(CUPTI_PROFILER_TYPE_RANGE_PROFILER);
  std::printf("cuptiProfilerHostInitialize(RANGE_PROFILER): %s\n", result_string(rp.init));
  {
    CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    const CUptiResult r = cuptiProfilerInitialize(&p);
    std::printf("cuptiProfilerInitialize here (no driver, no GPU), after the host calls: %s; no host call below "
                "needs it\n",
                result_string(r));
  }
  for (CUpti_ProfilerType t : {CUPTI_PROFILER_TYPE_PM_SAMPLING, CUPTI_PROFILER_TYPE_RANGE_PROFILER}) {
    CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params p{
        CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params_STRUCT_SIZE};
    p.profilerType = t;
    p.pChipName = chip.c_str();
    const CUptiResult r = cuptiProfilerHostGetMaxNumHardwareMetricsPerPass(&p);
    std::printf("GetMaxNumHardwareMetricsPerPass(%s): %s, %zu\n",
                t == CUPTI_PROFILER_TYPE_PM_SAMPLING ? "PM_SAMPLING" : "RANGE_PROFILER", result_string(r),
                p.maxMetricsPerPass);
  }

  // --- 2. base metrics ----------------------------------------------------------------------
  const auto pm_bases = base_metrics(pm);
  const auto rp_bases = base_metrics(rp);
  std::map<std::string, CUpti_MetricType> pm_short, rp_short;  // short base name -> type
  for (const auto& [n, t] : pm_bases) pm_short[short_base(n)] = t, g_listed[short_base(n)].push_back(n);
  for (const auto& [n, t] : rp_bases) rp_short[short_base(n)] = t;
  std::printf("\n## 2. Base metrics (GetBaseMetrics)\n");
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; ++t) {
    size_t a = 0, b = 0;
    for (const auto& x : pm_bases) a += x.second == t ? 1 : 0;
    for (const auto& x : rp_bases) b += x.second == t ? 1 : 0;
    std::printf("%-10s PM sampling %4zu, range profiler %4zu\n", type_name(static_cast<CUpti_MetricType>(t)), a, b);
  }
  size_t only_pm = 0, only_rp = 0, prefixed = 0;
  for (const auto& [n, t] : pm_short) only_pm += rp_short.count(n) ? 0 : 1;
  for (const auto& [n, t] : rp_short) only_rp += pm_short.count(n) ? 0 : 1;
  for (const auto& [n, t] : pm_bases) prefixed += short_base(n) != n ? 1 : 0;
  std::printf("distinct short names: PM sampling %zu, range profiler %zu; PM only %zu, range profiler only %zu\n",
              pm_short.size(), rp_short.size(), only_pm, only_rp);
  std::printf("PM-sampling base names listed with a group prefix (\"TPC.TriageCompute.\", ...): %zu (section 4)\n",
              prefixed);

  // --- 3. every rule counter ---------------------------------------------------------------
  std::printf("\n## 3. cutriage's rule counters (tests/gpu/rule_counters.cpp), each alone on a fresh host object\n");
  std::printf("columns: decisions | name | base listed for PM? | PM sampling config | range profiler config\n");
  size_t one_pass = 0, multi = 0, rejected = 0;
  std::vector<std::string> not_one_pass;
  for (const RuleCounter& rc : rules) {
    const std::string base = base_of(rc.name);
    const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {rc.name});
    const Config r = build(CUPTI_PROFILER_TYPE_RANGE_PROFILER, {rc.name});
    std::printf("%-17s %-72s %-3s PM: %-44s RP: %s\n", rc.decisions.c_str(), rc.name.c_str(),
                pm_short.count(base) ? "yes" : "no", c.describe().c_str(), r.describe().c_str());
    if (c.ok() && c.passes == 1) {
      ++one_pass;
    } else {
      (c.ok() ? multi : rejected) += 1;
      not_one_pass.push_back(rc.name);
    }
  }
  std::printf("summary: %zu rule counters; one PM pass alone: %zu; several PM passes: %zu; rejected for PM: %zu\n",
              rules.size(), one_pass, multi, rejected);

  std::printf("\n### 3b. PM-sampling stand-ins tried for the counters above that are not one pass\n");
  std::printf("(the same base with _realtime, .pct_of_peak_sustained_elapsed for _active, group-prefixed listings;\n"
              " a stand-in is another metric: its definition has to be checked against the original on the GPU)\n");
  for (const std::string& n : not_one_pass) {
    std::vector<std::string> found;
    for (const std::string& s : stand_ins(n)) {
      if (s == n) continue;
      const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {s});
      if (c.ok()) found.push_back(s + " (" + std::to_string(c.passes) + "p)");
    }
    std::printf("%-72s ->", n.c_str());
    if (found.empty()) std::printf(" none");
    for (const auto& f : found) std::printf(" %s", f.c_str());
    std::printf("\n");
  }

  std::printf("\n### 3c. Throughput breakdowns (triage/src/breakdown.cpp) under PM sampling\n");
  for (const Breakdown& b : breakdowns) {
    std::vector<std::string> one, several, no;
    for (const std::string& part : b.parts) {
      const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {part});
      (c.ok() ? (c.passes == 1 ? one : several) : no).push_back(part);
    }
    const auto groups = pack_one_pass(one);
    std::printf("%s: %zu parts; one PM pass alone %zu, several %zu, rejected %zu; the one-pass parts pack into %zu "
                "PM config(s)\n",
                b.metric.c_str(), b.parts.size(), one.size(), several.size(), no.size(), groups.size());
    for (const auto& n : several) {
      std::printf("  several passes: %s (%s)\n", n.c_str(),
                  build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {n}).describe().c_str());
    }
    for (const auto& n : no) std::printf("  rejected: %s\n", n.c_str());
    for (size_t g = 0; g < groups.size(); ++g) {
      std::printf("  config %zu:", g + 1);
      for (const auto& n : groups[g]) std::printf(" %s", base_of(n).c_str());
      std::printf("\n");
    }
  }

  // --- 4. the TriageCompute group ---------------------------------------------------------------
  std::printf("\n## 4. Group-prefixed PM-sampling metrics (\"<UNIT>.TriageCompute.<name>\"): description, passes "
              "alone\n");
  std::vector<std::string> triage_names;
  for (const auto& [n, t] : pm_bases) {
    if (short_base(n) == n) continue;
    std::string shown;
    for (const std::string& sfx : default_suffixes(t)) {
      const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {n + sfx});
      shown += " " + sfx + ": " + c.describe();
      if (c.ok() && c.passes == 1 && sfx == default_suffixes(t).back()) triage_names.push_back(n + sfx);
    }
    const Config r = build(CUPTI_PROFILER_TYPE_RANGE_PROFILER, {n + default_suffixes(t).back()});
    std::printf("%-82s %-10s%s; range profiler: %s; %s\n", n.c_str(), type_name(t), shown.c_str(),
                r.describe().c_str(), description(pm, n).c_str());
  }
  {
    const Config all = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, triage_names);
    std::printf("all %zu of them that are one pass alone, together: %s\n", triage_names.size(),
                all.describe().c_str());
  }
  std::printf("\nThe plain and prefixed throughputs compared:\n");
  for (const char* pair : {"sm__throughput|TriageCompute.sm__throughput", "lts__throughput|LTS.TriageCompute.lts__throughput",
                           "l1tex__throughput|SM_A.TriageCompute.l1tex__throughput",
                           "dramc__throughput|FBSP.TriageCompute.dramc__throughput"}) {
    const std::string s(pair);
    const std::string plain = s.substr(0, s.find('|')), group = s.substr(s.find('|') + 1);
    const std::string sfx = ".avg.pct_of_peak_sustained_elapsed";
    std::printf("  %-40s PM %-28s RP %-28s %s\n", plain.c_str(),
                build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {plain + sfx}).describe().c_str(),
                build(CUPTI_PROFILER_TYPE_RANGE_PROFILER, {plain + sfx}).describe().c_str(), description(pm, plain).c_str());
    std::printf("  %-40s PM %-28s RP %-28s %s\n", group.c_str(),
                build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {group + sfx}).describe().c_str(),
                build(CUPTI_PROFILER_TYPE_RANGE_PROFILER, {group + sfx}).describe().c_str(), description(pm, group).c_str());
  }

  // --- 5. sub-metrics ---------------------------------------------------------------------------
  std::printf("\n## 5. Sub-metrics (GetSubMetrics, PM sampling) of a few bases\n");
  for (const std::string& b : {std::string("sm__throughput"), std::string("dram__throughput"),
                               std::string("sm__inst_executed_realtime"), std::string("dram__bytes_read")}) {
    if (!pm_short.count(b)) continue;
    std::printf("%-30s %-10s", b.c_str(), type_name(pm_short[b]));
    for (const auto& sm : sub_metrics(pm, g_listed[b].front(), pm_short[b])) std::printf(" %s", sm.c_str());
    std::printf("\n");
  }

  // --- 6. one-pass sets for the per-node probe ----------------------------------------------
  std::printf("\n## 6. The per-node probe's set (tests/gpu/pm_probe.cu), built greedily as one PM config\n");
  // In order of use: Decision 2 (SM vs memory as % of peak), then pipes, then DRAM bytes. The
  // greedy pass keeps each name that leaves the set at one pass.
  const std::vector<std::string> priority = {
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
      "SM_C.TriageCompute.smsp__warps_issue_stalled_long_scoreboard.sum",
      "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
      "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
      "lts__t_sectors.sum",
      "gr__cycles_active.sum.pct_of_peak_sustained_elapsed",
      // The rules' own names, for comparison: several passes each.
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
  };
  std::printf("each alone:\n");
  for (const std::string& n : priority) {
    std::printf("  %-86s %s\n", n.c_str(), build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {n}).describe().c_str());
  }
  std::vector<std::string> kept;
  for (const std::string& n : priority) {
    if (!build(CUPTI_PROFILER_TYPE_PM_SAMPLING, {n}).ok()) continue;
    std::vector<std::string> trial = kept;
    trial.push_back(n);
    const Config c = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, trial);
    if (c.ok() && c.passes == 1) {
      kept = std::move(trial);
    } else {
      std::printf("greedy: %s left out (with it: %s)\n", n.c_str(), c.describe().c_str());
    }
  }
  const Config k = build(CUPTI_PROFILER_TYPE_PM_SAMPLING, kept);
  std::printf("greedy one-pass set, %zu metrics, %s:\n", kept.size(), k.describe().c_str());
  for (const auto& n : kept) std::printf("  %s\n", n.c_str());

  // --- 7. the full PM-sampling base list ------------------------------------------------------
  std::printf("\n## 7. Every PM-sampling base metric of %s (name, type, short name also a range-profiler base?)\n",
              chip.c_str());
  for (const auto& [n, t] : pm_bases) {
    std::printf("%s\t%s\t%s\n", n.c_str(), type_name(t), rp_short.count(short_base(n)) ? "rp" : "pm-only");
  }
  return 0;
}

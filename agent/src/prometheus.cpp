#include "prometheus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace cutriage::agent {

namespace {

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

// Shortest exact-enough form; Prometheus reads "+Inf"/"NaN" but the agent never writes them.
std::string number(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string number(uint64_t v) { return std::to_string(v); }

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

class Labels {
 public:
  Labels& add(const char* key, std::string_view value) {
    text_ += text_.empty() ? "{" : ",";
    text_ += key;
    text_ += "=\"";
    text_ += escape_label(value);
    text_ += '"';
    return *this;
  }
  [[nodiscard]] std::string str() const { return text_.empty() ? "" : text_ + "}"; }

 private:
  std::string text_;
};

const PromGpu* gpu_of(const PromSnapshot& s, uint32_t device) {
  for (const PromGpu& g : s.gpus) {
    if (g.device == device) return &g;
  }
  return nullptr;
}

// The process's labels: its host, and its rank when it is one of a job's.
Labels& add_process(Labels& l, const PromSnapshot& s) {
  l.add("Hostname", s.host);
  if (s.rank) l.add("rank", std::to_string(*s.rank));
  return l;
}

Labels process_labels(const PromSnapshot& s) {
  Labels l;
  add_process(l, s);
  return l;
}

Labels gpu_labels(const PromSnapshot& s, uint32_t device) {
  Labels l;
  l.add("gpu", std::to_string(device));
  const PromGpu* g = gpu_of(s, device);
  l.add("UUID", g ? g->uuid : "");
  l.add(s.dcgm_model_label ? "modelName" : "model_name", g ? g->model : "");
  add_process(l, s);
  return l;
}

std::string cut(std::string_view name) {
  if (name.size() <= kMaxKernelLabel) return std::string(name);
  // Cut at a UTF-8 character boundary, then mark the cut.
  size_t n = kMaxKernelLabel;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return std::string(name.substr(0, n)) + "...";
}

// Not strerror: its buffer is shared by every thread of the application the agent runs in.
std::string error_text(int err) { return std::generic_category().message(err); }

}  // namespace

std::string render_prometheus(const PromSnapshot& s) {
  std::string out;
  const std::string agent = process_labels(s).add("state", s.agent_state).str();
  header(out, "cutriage_agent_info", "gauge", "cutriage agent running in this process (1), with its state.");
  out += "cutriage_agent_info" + agent + " 1\n";
  const std::string host = process_labels(s).str();
  // One series labelled with the host only.
  auto host_series = [&](const char* name, const char* type, const char* help, const std::string& value) {
    header(out, name, type, help);
    out += std::string(name) + host + " " + value + "\n";
  };
  host_series("cutriage_kernel_launches_total", "counter", "Kernel launches the agent saw.", number(s.kernel_launches));
  host_series("cutriage_profiled_launches_total", "counter", "Launches replayed for hardware counters.",
              number(s.profiled_launches));
  host_series("cutriage_pc_sampled_launches_total", "counter", "Launches PC-sampled for stall reasons per line.",
              number(s.sampled_launches));
  host_series("cutriage_trace_dropped_records_total", "counter",
              "Kernel trace records CUPTI dropped (buffers full); the statistics undercount by this much.",
              number(s.dropped_trace_records));
  if (s.has_budget) {
    host_series("cutriage_budget_ratio", "gauge",
                "Always-on: the share of wall time profiled and sampled launches may cost the application "
                "(CUTRIAGE_BUDGET).",
                number(s.budget_ratio));
    host_series("cutriage_overhead_seconds_total", "counter",
                "Always-on: time profiled and sampled launches cost the application's threads, measured.",
                number(s.overhead_seconds));
    host_series("cutriage_startup_seconds", "gauge",
                "Always-on: CUPTI's one-off start-up paid before the first profile (CUTRIAGE_WARMUP), "
                "outside the budget and cutriage_overhead_seconds_total.",
                number(s.startup_seconds));
    host_series("cutriage_launch_callbacks_off_seconds_total", "counter",
                "Always-on: time CUPTI's launch and wait callbacks were off (CUTRIAGE_LAUNCH_GATE); launches made "
                "then are in no launch count.",
                number(s.launch_callbacks_off_seconds));
    host_series("cutriage_agent_seconds_total", "counter", "Always-on: wall time since the agent started.",
                number(s.wall_seconds));
    host_series("cutriage_budget_admitted_total", "counter", "Always-on: launches the budget let through.",
                number(s.budget_admitted));
    host_series("cutriage_budget_deferred_total", "counter", "Always-on: selected launches the budget held back.",
                number(s.budget_deferred));
    host_series("cutriage_trace_duty_ratio", "gauge",
                "Always-on: the share of time the kernel trace runs (CUTRIAGE_TRACE_DUTY); below 1 the GPU and "
                "kernel family seconds cover the traced time only.",
                number(s.trace_duty));
    host_series("cutriage_trace_paused_seconds_total", "counter",
                "Always-on: time the kernel trace was paused (CUTRIAGE_TRACE_DUTY).", number(s.trace_paused_seconds));
  }

  header(out, "cutriage_gpu_busy_seconds", "gauge", "Time the GPU ran a kernel or a copy, over the traced span.");
  for (const PromGpu& g : s.gpus) out += "cutriage_gpu_busy_seconds" + gpu_labels(s, g.device).str() + " " + number(g.busy_seconds) + "\n";
  header(out, "cutriage_gpu_traced_seconds", "gauge", "Span of the GPU's kernel trace.");
  for (const PromGpu& g : s.gpus) out += "cutriage_gpu_traced_seconds" + gpu_labels(s, g.device).str() + " " + number(g.span_seconds) + "\n";

  const size_t n = s.families.size() < kMaxPromFamilies ? s.families.size() : kMaxPromFamilies;
  auto family_labels = [&](const PromFamily& f) {
    Labels l = gpu_labels(s, f.device);
    l.add("family", std::to_string(f.family_id));
    l.add("kernel", cut(f.kernel));
    return l.str();
  };
  header(out, "cutriage_kernel_family_gpu_seconds_total", "counter",
         "Traced GPU time of a kernel family (mangled name, device, block shape); profiled launches left out.");
  for (size_t i = 0; i < n; ++i) {
    out += "cutriage_kernel_family_gpu_seconds_total" + family_labels(s.families[i]) + " " + number(s.families[i].gpu_seconds) + "\n";
  }
  header(out, "cutriage_kernel_family_launches_total", "counter", "Traced executions of a kernel family.");
  for (size_t i = 0; i < n; ++i) {
    out += "cutriage_kernel_family_launches_total" + family_labels(s.families[i]) + " " + number(s.families[i].launches) + "\n";
  }
  header(out, "cutriage_kernel_family_time_share", "gauge", "Share of all traced kernel time, 0 to 1.");
  for (size_t i = 0; i < n; ++i) {
    out += "cutriage_kernel_family_time_share" + family_labels(s.families[i]) + " " + number(s.families[i].share) + "\n";
  }
  header(out, "cutriage_kernel_family_verdict", "gauge",
         "The triage verdict of a diagnosed kernel family (1), its classification and primary limiter as labels.");
  for (size_t i = 0; i < n; ++i) {
    const PromFamily& f = s.families[i];
    if (f.verdict.empty()) continue;
    Labels l = gpu_labels(s, f.device);
    l.add("family", std::to_string(f.family_id)).add("kernel", cut(f.kernel)).add("verdict", f.verdict).add("limiter", f.limiter);
    out += "cutriage_kernel_family_verdict" + l.str() + " 1\n";
  }
  const size_t graphs = s.graphs.size() < kMaxPromGraphs ? s.graphs.size() : kMaxPromGraphs;
  auto graph_series = [&](const char* name, const char* help, auto value) {
    header(out, name, "counter", help);
    for (size_t i = 0; i < graphs; ++i) {
      const PromGraph& g = s.graphs[i];
      out += std::string(name) + process_labels(s).add("graph", std::to_string(g.graph_id)).str() + " " +
             number(value(g)) + "\n";
    }
  };
  if (graphs > 0) {
    graph_series("cutriage_graph_replays_total", "Launches of a CUDA graph with kernels traced.",
                 [](const PromGraph& g) { return static_cast<double>(g.replays); });
    graph_series("cutriage_graph_kernel_seconds_total", "Time a kernel of the graph ran, summed over its replays.",
                 [](const PromGraph& g) { return g.kernel_seconds; });
    graph_series("cutriage_graph_span_seconds_total",
                 "First node start to last node end of each replay of the graph, summed.",
                 [](const PromGraph& g) { return g.span_seconds; });
    graph_series("cutriage_graph_idle_between_nodes_seconds_total",
                 "Time inside the graph's replays when none of its kernels ran, summed.",
                 [](const PromGraph& g) { return g.idle_between_nodes_seconds; });
  }
  if (s.has_budget) {
    // Always-on: the progress of each diagnosis being assembled, so a dashboard can show which
    // verdicts are final and how far the others have come.
    auto progress = [&](const char* name, const char* help, auto value) {
      header(out, name, "gauge", help);
      for (size_t i = 0; i < n; ++i) {
        const PromFamily& f = s.families[i];
        if (f.assembled_launches == 0) continue;
        out += std::string(name) + family_labels(f) + " " + number(value(f)) + "\n";
      }
    };
    progress("cutriage_kernel_family_diagnosis_complete",
             "Always-on: 1 when every counter the family's route reads was collected, 0 while it assembles.",
             [](const PromFamily& f) { return f.complete ? 1.0 : 0.0; });
    progress("cutriage_kernel_family_assembled_launches",
             "Always-on: launches the family's counters were assembled from, one single-pass group each.",
             [](const PromFamily& f) { return static_cast<double>(f.assembled_launches); });
    progress("cutriage_kernel_family_counters_missing",
             "Always-on: counters the family's route still wants.",
             [](const PromFamily& f) { return static_cast<double>(f.counters_missing); });
  }
  return out;
}

std::string write_atomically(const std::string& path, std::string_view text) {
  // The temporary name starts with '.': node_exporter's textfile collector reads only *.prom.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "." + base + ".tmp." + std::to_string(::getpid());
  // Created here or not at all (O_EXCL, O_NOFOLLOW): a symbolic link or anything else planted at
  // the temporary name is never written through. A leftover of our own (a regular file of this
  // user, from a process with the same pid) is removed first. 0644: node_exporter reads the file
  // as another user; it holds no command line.
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
  int fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST) {
    struct stat st {};
    if (::lstat(tmp.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
      (void)::unlink(tmp.c_str());
      fd = ::open(tmp.c_str(), flags, 0644);
    } else {
      return "cannot create " + tmp + ": something that is not a file of ours is there";
    }
  }
  if (fd < 0) return "cannot create " + tmp + ": " + error_text(errno);
  size_t done = 0;
  std::string error;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      error = "cannot write " + tmp + ": " + error_text(errno);
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0 && error.empty()) error = "cannot write " + tmp + ": " + error_text(errno);
  if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + error_text(errno);
  }
  if (!error.empty()) ::unlink(tmp.c_str());
  return error;
}

}  // namespace cutriage::agent

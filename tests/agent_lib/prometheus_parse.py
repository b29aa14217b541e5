"""Reads the agent's Prometheus export with prometheus_client's parser (a real one) and checks it.

Usage: prometheus_parse.py EXAMPLE_BINARY OUT_FILE [H200_FILE]: the example's output (a run through
the fake platform, with hostile kernel names), and a file the agent wrote on the H200. Exits 77 (CTest: skipped) when the parser is
not installed (Debian: python3-prometheus-client, installed by cmake/install-deps.sh).
"""
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("prometheus_client not installed: skipped")
    sys.exit(77)

binary, out = sys.argv[1], sys.argv[2]
subprocess.run([binary, out], check=True)
text = open(out, encoding="utf-8").read()
families = {f.name: f for f in text_string_to_metric_families(text)}


def samples(name):
    return families[name].samples


# Counters lose their _total suffix in the parsed family name (the samples keep it).
launches = samples("cutriage_kernel_launches")
assert len(launches) == 1 and launches[0].value == 20, launches
assert launches[0].labels["Hostname"] == 'node "7"', launches[0].labels
per_family = {s.labels["kernel"]: s for s in samples("cutriage_kernel_family_launches")}
assert set(per_family) == {"plain_gemm", 'odd"kernel\\name'}, per_family.keys()
for s in per_family.values():
    assert s.value == 10, s
    assert s.labels["gpu"] == "0" and s.labels["UUID"] == "GPU-fake-0", s.labels
    assert s.labels["model_name"] == "NVIDIA H200", s.labels  # modelName only when asked for
gpu_seconds = samples("cutriage_kernel_family_gpu_seconds")
assert all(s.value > 0 for s in gpu_seconds), gpu_seconds
share = sum(s.value for s in samples("cutriage_kernel_family_time_share"))
assert abs(share - 1.0) < 1e-6, share
assert families["cutriage_gpu_busy_seconds"].type == "gauge"
assert families["cutriage_kernel_family_gpu_seconds"].type == "counter"
verdicts = samples("cutriage_kernel_family_verdict")
assert verdicts and all(s.labels["verdict"] for s in verdicts), verdicts
print("ok: %d metric families, %d samples" % (len(families), sum(len(f.samples) for f in families.values())))

if len(sys.argv) > 3:
    # A real run: PyTorch's 13 kernel families on the H200, the top 5 profiled and sampled.
    real = {f.name: f for f in text_string_to_metric_families(open(sys.argv[3], encoding="utf-8").read())}
    fams = real["cutriage_kernel_family_launches"].samples
    assert len(fams) == 13, len(fams)
    # Written before model_name (the agent then named it modelName, as dcgm-exporter does).
    assert all(s.labels["UUID"].startswith("GPU-") and s.labels["modelName"] == "NVIDIA H200" for s in fams)
    shares = sum(s.value for s in real["cutriage_kernel_family_time_share"].samples)
    assert abs(shares - 1.0) < 1e-6, shares
    verdicts = {s.labels["verdict"] for s in real["cutriage_kernel_family_verdict"].samples}
    assert "compute_bound" in verdicts, verdicts
    sampled = real["cutriage_pc_sampled_launches"].samples[0].value
    assert sampled >= 5, sampled
    busy = real["cutriage_gpu_busy_seconds"].samples[0].value
    span = real["cutriage_gpu_traced_seconds"].samples[0].value
    assert 0 < busy <= span, (busy, span)
    print("ok: H200 file, %d families, verdicts %s" % (len(fams), sorted(verdicts)))

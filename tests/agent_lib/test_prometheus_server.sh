#!/usr/bin/env bash
# The agent's Prometheus file the way a fleet reads it: node_exporter's textfile collector (Debian
# prometheus-node-exporter) serves the .prom files of a directory, a real Prometheus server
# (Debian prometheus) scrapes it, and each cutriage series is queried back through the HTTP API
# (/api/v1/query): every sample of the file must come back with its labels and its value.
#
# Files: the every-series snapshot of the example (always-on, graphs, two GPUs, a kernel name with
# a quote, a backslash and a newline) and the file the agent wrote on the H200
# (tests/data/prometheus/torch_loop.prom, long demangled names). Both servers listen on loopback
# on free ports, keep their data in a temporary directory and are stopped whatever happens (trap;
# each also runs under `timeout`, so not even a killed test leaves one behind).
#
# usage: test_prometheus_server.sh PROMETHEUS_EXAMPLE DATA_DIR. Exits 77 (skipped) when prometheus,
# prometheus-node-exporter or python3 is missing.
set -u
example=$1
data=$2
prometheus=${CUTRIAGE_PROMETHEUS:-$(command -v prometheus || true)}
node_exporter=${CUTRIAGE_NODE_EXPORTER:-$(command -v prometheus-node-exporter || command -v node_exporter || true)}
python=$(command -v python3 || true)
for tool in prometheus node_exporter python; do
  if [[ -z ${!tool} ]]; then
    echo "$tool not found (Debian: prometheus, prometheus-node-exporter, python3; cmake/install-deps.sh): skipped"
    exit 77
  fi
done
limit=${CUTRIAGE_PROMETHEUS_TEST_SECONDS:-150}  # each server's own life, past the test's wait

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

free_port() {  # a port nothing listens on now (the servers' own bind failure is caught below)
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$tmp/textfile" "$tmp/tsdb"
"$example" "$tmp/every.prom" all || { echo "FAIL: $example every.prom all"; exit 1; }
cp "$data/prometheus/torch_loop.prom" "$tmp/torch_loop.prom"
# The collector reads *.prom only; what it serves is checked file by file below.
cp "$tmp/every.prom" "$tmp/torch_loop.prom" "$tmp/textfile/"

start_servers() {
  ne_port=$(free_port)
  prom_port=$(free_port)
  cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$ne_port"]
EOF
  # Only the textfile collector: the host's own metrics are not what is tested.
  timeout -k 5 "$limit" "$node_exporter" --web.listen-address="127.0.0.1:$ne_port" \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$tmp/textfile" \
    >"$tmp/node_exporter.log" 2>&1 &
  pids+=($!)
  timeout -k 5 "$limit" "$prometheus" --config.file="$tmp/prometheus.yml" \
    --web.listen-address="127.0.0.1:$prom_port" --storage.tsdb.path="$tmp/tsdb" \
    >"$tmp/prometheus.log" 2>&1 &
  pids+=($!)
}

# A port taken between free_port and the server's bind: try again with others.
for attempt in 1 2 3; do
  start_servers
  sleep 2
  alive=1
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || alive=0; done
  ((alive)) && break
  echo "attempt $attempt: a server exited at start:"; tail -3 "$tmp/node_exporter.log" "$tmp/prometheus.log"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  pids=()
  rm -rf "$tmp/tsdb"; mkdir -p "$tmp/tsdb"
done
((alive)) || { echo "FAIL: the servers did not start"; exit 1; }
echo "node_exporter on 127.0.0.1:$ne_port, prometheus on 127.0.0.1:$prom_port"

"$python" - "http://127.0.0.1:$prom_port" "http://127.0.0.1:$ne_port/metrics" "$tmp/every.prom" "$tmp/torch_loop.prom" <<'EOF'
"""Waits for the scrape, then queries every cutriage series of each file back."""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

api, exporter, files = sys.argv[1], sys.argv[2], sys.argv[3:]
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse(path):
    """(name, frozenset of labels) -> value, for every sample line of a .prom file."""
    out = {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"{path}: cannot read {line!r}"
        labels = {k: re.sub(r'\\[\\"n]', lambda e: UNESCAPE[e.group(0)], v)
                  for k, v in PAIR.findall(m.group(2) or "")}
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return out


def query(expr):
    url = api + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


expected = {}
for path in files:
    samples = parse(path)
    for key, value in samples.items():
        assert key not in expected, f"{path}: {key} is also in another file"
        expected[key] = (value, path)
    print(f"{path}: {len(samples)} samples")

# The exporter serves them (an error in one file shows as node_textfile_scrape_error 1).
deadline = time.time() + 60
while True:
    try:
        text = urllib.request.urlopen(exporter, timeout=5).read().decode()
        if "cutriage_agent_info" in text:
            break
    except OSError:
        pass
    assert time.time() < deadline, "node_exporter did not serve the files in 60 s"
    time.sleep(0.5)
errors = [l for l in text.splitlines() if l.startswith("node_textfile_scrape_error")]
assert errors and all(l.endswith(" 0") for l in errors), f"node_exporter: {errors}"

# Then Prometheus has scraped them: every series of the files, none more.
deadline = time.time() + 60
while True:
    try:
        result = query('{__name__=~"cutriage_.*"}')
        if len(result) >= len(expected):
            break
    except OSError:
        result = []
    assert time.time() < deadline, f"Prometheus holds {len(result)} of {len(expected)} series after 60 s"
    time.sleep(1)

got = {}
for series in result:
    metric = dict(series["metric"])
    name = metric.pop("__name__")
    assert metric.pop("job") == "node" and metric.pop("instance"), series
    got[(name, frozenset(metric.items()))] = float(series["value"][1])
failed = 0
for key, (value, path) in expected.items():
    if key not in got:
        print(f"FAIL {path}: {key[0]}{dict(key[1])} not in Prometheus")
        failed += 1
    elif got[key] != value:
        print(f"FAIL {path}: {key[0]}{dict(key[1])} = {got[key]!r} in Prometheus, {value!r} in the file")
        failed += 1
for key in set(got) - set(expected):
    print(f"FAIL Prometheus holds {key[0]}{dict(key[1])}, in no file")
    failed += 1

# One query by name and labels, as a dashboard asks: the H200 file's largest family.
one = query('cutriage_kernel_family_gpu_seconds_total{family="2",Hostname="vm"}')
assert len(one) == 1 and float(one[0]["value"][1]) == 0.041903222, one
escaped = query('cutriage_kernel_family_launches_total{kernel="odd\\"kernel\\\\name\\nline"}')
assert len(escaped) == 1 and float(escaped[0]["value"][1]) == 90000, escaped
print(f"{len(expected)} series queried back, {failed} wrong")
sys.exit(1 if failed else 0)
EOF
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "--- node_exporter log"; tail -20 "$tmp/node_exporter.log"
  echo "--- prometheus log"; tail -20 "$tmp/prometheus.log"
fi
exit $rc

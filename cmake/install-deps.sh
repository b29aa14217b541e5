#!/usr/bin/env bash
# Installs what cutriage's build and tests need on Debian 12 (bookworm). The CUDA toolkit is
# expected at /usr/local/cuda already (it is not a Debian package); without it the CUPTI targets
# and the example zoo are skipped and everything else still builds and tests.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  protobuf-compiler                   # protoc: the wire schema header (every build), the classes below
  libprotobuf-dev                     # schema classes for the tool and tests (FindProtobuf)
  zlib1g-dev                          # `cutriage pprof` gzips its profiles (FindZLIB)
  libprotozero-dev                    # header-only wire encoder used by the agent
  libspdlog-dev libfmt-dev            # header-only logging in the agent
  libcli11-dev                        # header-only command line parser of the `cutriage` tool
  catch2                              # tests (v2.13 on Debian 12; v3 also works)
  python3                             # cli.trace_export reads `cutriage trace` output with json
  python3-prometheus-client           # agent.prometheus_parses reads the Prometheus export
  # The exports checked with the real tools (tests skip without them): promtool and a Prometheus
  # server (agent.promtool, agent.prometheus_server), node_exporter's textfile collector
  # (agent.prometheus_server), `go tool pprof` (cli.pprof_go). Their services are stopped below.
  prometheus prometheus-node-exporter golang-go
  chromium                            # cli.html_chromium renders `report --html` headless
  # Quality gates (.ci/sanitize.sh, fuzz.sh, tidy.sh): clang with the sanitizer and libFuzzer
  # runtimes, clang-tidy, and llvm-symbolizer for readable sanitizer stacks.
  clang-14 libclang-rt-14-dev clang-tidy-14 llvm-14
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# prometheus and prometheus-node-exporter install system services that start at once (where
# policy-rc.d allows) and at boot. The tests start their own on loopback with free ports; a CI
# machine runs none: stop them and keep them from starting again.
for service in prometheus prometheus-node-exporter; do
  if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    $SUDO systemctl disable --now "$service.service" >/dev/null 2>&1 || true
  elif [[ -x /etc/init.d/$service ]]; then
    $SUDO /etc/init.d/"$service" stop >/dev/null 2>&1 || true
    $SUDO update-rc.d "$service" disable >/dev/null 2>&1 || true
  fi
done

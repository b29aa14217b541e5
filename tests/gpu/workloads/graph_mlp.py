# A serving-style loop: the forward pass of a small MLP (4 x Linear 4096 + GELU + LayerNorm, bf16,
# batch 4096) captured into a CUDA graph once, then replayed. Prints a checksum of every replay's
# output, which must be identical with and without the agent, and on stderr the replay rate.
#
#   python3 graph_mlp.py [REPLAYS] [SECONDS]   REPLAYS (default 300) or, with SECONDS > 0, replays
#                                              until that much time has passed (always-on runs)
import hashlib
import sys
import time

import torch

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 300
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
torch.manual_seed(0)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.LayerNorm(4096)]
model = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16).eval()
static_x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
inputs = [torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(4)]

side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.no_grad(), torch.cuda.stream(side):
    for _ in range(3):  # warm-up outside the graph, as the capture docs ask
        model(static_x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_y = model(static_x)

digest = hashlib.sha256()
t0 = time.perf_counter()
done = 0
while (seconds > 0 and time.perf_counter() - t0 < seconds) or (seconds <= 0 and done < replays):
    static_x.copy_(inputs[done % len(inputs)])
    graph.replay()
    done += 1
    if seconds <= 0 and (done % 50 == 0 or done == replays):
        digest.update(static_y.float().sum(dim=1).cpu().numpy().tobytes())
torch.cuda.synchronize()
elapsed = time.perf_counter() - t0
print(f"graph_mlp: {done} replays, output sha256 {digest.hexdigest()[:16]}" if seconds <= 0 else
      "graph_mlp: timed run")
print(f"replays_per_s={done / elapsed:.2f}", file=sys.stderr)

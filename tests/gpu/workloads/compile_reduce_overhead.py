# torch.compile(mode="reduce-overhead"): Inductor's Triton kernels, run through CUDA graphs that
# the compiler captures itself after its warm-up calls. Prints a checksum of the outputs, which
# must be identical with and without the agent, and on stderr the step rate.
#
#   python3 compile_reduce_overhead.py [STEPS] [SECONDS]
#
# DETERMINISTIC=1: deterministic algorithms only (and cuBLAS's fixed workspace), so that two runs
# sharing one Inductor cache compute the same outputs (without it, plain runs differed on the H200).
import hashlib
import os
import sys
import time

if os.environ.get("DETERMINISTIC") == "1":
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch

if os.environ.get("DETERMINISTIC") == "1":
    torch.use_deterministic_algorithms(True)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


model = torch.nn.Sequential(*[Block(2048) for _ in range(4)]).cuda().to(torch.bfloat16).eval()
compiled = torch.compile(model, mode="reduce-overhead")
inputs = [torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
digest = hashlib.sha256()
with torch.no_grad():
    for i in range(3):  # compile, warm-up, capture
        compiled(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    done = 0
    while (seconds > 0 and time.perf_counter() - t0 < seconds) or (seconds <= 0 and done < steps):
        y = compiled(inputs[done % len(inputs)])
        done += 1
        if seconds <= 0 and (done % 50 == 0 or done == steps):
            digest.update(y.float().sum(dim=1).cpu().numpy().tobytes())
    torch.cuda.synchronize()
elapsed = time.perf_counter() - t0
print(f"compile_reduce_overhead: {done} steps, output sha256 {digest.hexdigest()[:16]}" if seconds <= 0 else
      "compile_reduce_overhead: timed run")
print(f"steps_per_s={done / elapsed:.2f}", file=sys.stderr)

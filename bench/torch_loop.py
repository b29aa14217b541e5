# A small PyTorch training loop (MLP, MSE, SGD) for the agent's GPU tests and benchmarks: prints
# the final loss, which must be identical with and without the agent (TF32 off, fixed seed).
#
#   python3 torch_loop.py [STEPS]   also prints, on stderr, the steady-state rate of the steps
#                                   after the first 10 ("steps_per_s=..."), for the benchmarks.
#
# TORCH_LOOP_WINDOW_MS=N: at the loss reads (every 10 steps) once N ms have passed, a line
# "window <CLOCK_MONOTONIC ns> <steps>" on stderr: the steps finished since the previous line
# (bench/trace_split.py compares stretches of one run).
import os
import sys
import time
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(2048, 1024, device="cuda")
y = torch.randn(2048, 1024, device="cuda")
warm = min(10, steps)
t0 = None
window_ns = int(os.environ.get("TORCH_LOOP_WINDOW_MS", "0")) * 1000000
window_start = time.monotonic_ns()
window_steps = 0
for step in range(steps):
    if step == warm:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    window_steps += 1
    if step % 10 == 9:
        loss.item()  # a training loop logs its loss now and then: a host synchronization
        if window_ns > 0:
            now = time.monotonic_ns()
            if now - window_start >= window_ns:
                print("window %d %d" % (now, window_steps), file=sys.stderr)
                window_start, window_steps = now, 0
torch.cuda.synchronize()
if t0 is not None and steps > warm:
    print("steps_per_s=%.3f" % ((steps - warm) / (time.perf_counter() - t0)), file=sys.stderr)
print("final loss %.6f" % loss.item())

"""Short PyTorch programs of the kind issue 21 found cutriage missing the top kernel of: each
queues its work back to back without synchronizing, then prints one checksum line (compared
plain vs under the agent).

    python3 short_scripts.py matmul10|layernorm|conv2d
"""
import sys

import torch


def matmul10():
    # Ten bf16 8192^3 GEMMs; the inputs' random fill runs first.
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    acc = torch.zeros(8192, 8192, device="cuda", dtype=torch.float32)
    for _ in range(10):
        acc += (a @ b).float()
    return acc


def layernorm():
    x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
    ln = torch.nn.LayerNorm(8192, device="cuda", dtype=torch.bfloat16)
    y = x
    for _ in range(10):
        y = ln(y)
    return y.float()


def conv2d():
    x = torch.randn(32, 64, 224, 224, device="cuda", dtype=torch.float16)
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, device="cuda", dtype=torch.float16)
    y = x
    with torch.no_grad():
        for _ in range(10):
            y = conv(y).clamp_(-4, 4)
    return y.float()


def main():
    name = sys.argv[1]
    torch.manual_seed(0)
    out = {"matmul10": matmul10, "layernorm": layernorm, "conv2d": conv2d}[name]()
    torch.cuda.synchronize()
    print("short_script: %s checksum=%.6e absmax=%.6e" % (name, out.double().sum().item(), out.abs().max().item()))


if __name__ == "__main__":
    main()

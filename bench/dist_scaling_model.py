#!/usr/bin/env python3
"""Data-parallel step time vs world size, on paper (issue 20; docs/DISTRIBUTED.md).

A model of one optimizer step of synchronous data parallelism with a fixed global batch:
  compute  = tokens per GPU x 6 N FLOPs / (peak x MFU)      (forward + backward; N parameters)
  comm     = ring all-reduce of the gradients: each GPU sends and receives 2 (p-1)/p x G bytes
             (G = N x bytes per gradient) at the bus bandwidth of the slowest link in the ring
             (NVLink inside a node of 8; the NIC per GPU across nodes); ZeRO-1's
             reduce-scatter + all-gather move the same bytes
  exposed  = comm that the backward (2/3 of compute) cannot hide: max(0, comm - overlap x
             backward), with `overlap` the fraction of the backward the buckets run under
  step     = compute + exposed (+ the optimizer, ignored: < 2% of a step here)
Every assumption is an argument with its default printed in the output, so the table says
what it assumed. Only the standard library.

    python3 bench/dist_scaling_model.py [--mfu 0.4] [--overlap 0.8] [--grad-bytes 2]
"""
import argparse

MODELS = {  # name: (parameters, tokens per optimizer step)
    "GPT-2 124M": (124_439_808, 2 ** 19),   # llm.c's 0.5M-token batch
    "Llama 1B": (1_235_814_400, 2 ** 20),   # Llama 3.2 1B shape, 1M-token batch
}
FABRICS = {  # name: bus bandwidth per GPU across nodes, bytes/s (intra-node is NVLink)
    "100 Gb/s": 100e9 / 8 * 0.8,
    "400 Gb/s": 400e9 / 8 * 0.8,
}


def step_time(n, tokens, p, fabric_bw, a):
    compute = tokens / p * 6 * n / (a.peak * a.mfu)
    if p == 1:
        return compute, 0.0, 0.0
    bw = a.nvlink if p <= a.gpus_per_node else min(a.nvlink, fabric_bw)
    comm = 2 * (p - 1) / p * n * a.grad_bytes / bw
    exposed = max(0.0, comm - a.overlap * compute * 2 / 3)
    return compute, comm, exposed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peak", type=float, default=989e12, help="dense bf16 FLOP/s per GPU (H100 SXM)")
    ap.add_argument("--mfu", type=float, default=0.40, help="model FLOPs utilisation of one GPU")
    ap.add_argument("--nvlink", type=float, default=360e9, help="NCCL bus bandwidth in a node, B/s")
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--grad-bytes", type=int, default=2, help="bytes per gradient on the wire (bf16: 2)")
    ap.add_argument("--overlap", type=float, default=0.8,
                    help="fraction of the backward the gradient buckets overlap")
    a = ap.parse_args()
    print(f"Assumed: {a.peak / 1e12:.0f} TFLOP/s peak at MFU {a.mfu}, NVLink bus {a.nvlink / 1e9:.0f} GB/s "
          f"({a.gpus_per_node} GPUs a node), fabrics {', '.join(f'{k} = {v / 1e9:.0f} GB/s bus' for k, v in FABRICS.items())}, "
          f"{a.grad_bytes}-byte gradients, overlap {a.overlap} of the backward.\n")
    for name, (n, tokens) in MODELS.items():
        print(f"{name}: {n / 1e6:.0f}M parameters, {tokens} tokens per step")
        print("| GPUs | fabric | compute ms | all-reduce ms | exposed ms | step ms | tokens/s | scaling efficiency |")
        print("|---|---|---|---|---|---|---|---|")
        base = step_time(n, tokens, 1, 0, a)[0]
        for p in (1, 8, 64, 512):
            for fabric, bw in FABRICS.items():
                if p <= a.gpus_per_node and fabric != next(iter(FABRICS)):
                    continue  # one node: NVLink only
                c, comm, exp = step_time(n, tokens, p, bw, a)
                step = c + exp
                label = "NVLink" if p <= a.gpus_per_node else fabric
                print(f"| {p} | {label} | {c * 1e3:.1f} | {comm * 1e3:.1f} | {exp * 1e3:.1f} | "
                      f"{step * 1e3:.1f} | {tokens / step:,.0f} | {base / (p * step):.0%} |")
        print()


if __name__ == "__main__":
    main()

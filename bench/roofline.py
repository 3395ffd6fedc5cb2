#!/usr/bin/env python3
"""Each op's roofline floor from a per-op profile, and how far above it the op runs (issue 43).

Input: a profile as `trainrt bench --profile --json FILE` writes it (schema
trainrt-bench-profile/1: the last run is read, the config's thread count) or as
trainrt_session_profile returns it (trainrt-op-profile/1). Every op row holds its FLOPs and
bytes (src/backend/op_costs.h: the products' 2*N*K*M, attention's causal pairs; each tensor
read or written once, at its dtype) and its measured seconds.

An op's floor is max(FLOPs / peak FLOP/s, bytes / peak bytes/s): the least time any kernel
could take at the device's datasheet peaks. The peaks come from, in this order: --peak-tflops
/ --peak-gbs; --device NAME (the table below, the same as src/runtime/perf.cpp's, matched the
same way; --precision picks the column, default the profile's); the profile's own
peak_flops / peak_bytes_per_s (what the run's device reported). FLOPs and bytes depend on the
config, not on the device, so a profile measured anywhere (a CPU run of the real shapes) gives
the floors for any device; "measured" and "x floor" then describe the device it ran on.

Output (markdown): per op (label, summed over the layers) calls/step, ms/step, floor ms, x floor
(measured / floor), ms over the floor, the share of the step's lost time, ranked by the time
lost; then the step: measured, sum of floors, the time between the ops, and the tokens/s the
floors would allow. --json FILE writes the same rows.

Usage:
  python3 bench/roofline.py PROFILE.json [--device "NVIDIA H100 80GB HBM3"] [--precision bf16]
      [--peak-tflops X] [--peak-gbs Y] [--top N] [--json FILE]
Exit status 0; 2 on bad usage or an unreadable profile. Standard library only.
"""

import argparse
import json
import sys

# Dense datasheet TFLOP/s (bf16 = fp16, tf32, fp32) and memory GB/s, as src/runtime/perf.cpp
# (tests/cli/cli_bench.sh checks the two tables agree). Rows: (must contain, must not
# contain, bf16, tf32, fp32); first match wins on the lower-cased name.
PEAK_TFLOPS = [
    ("h100 pcie", "", 756.0, 378.0, 51.0),
    ("h100", "nvl", 989.4, 494.7, 66.9),
    ("h200", "nvl", 989.4, 494.7, 66.9),
    ("a100", "", 312.0, 156.0, 19.5),
    ("l40s", "", 362.05, 183.0, 91.6),
    ("rtx 4090", "", 165.2, 82.6, 82.6),
]
# (must contain, also, must not contain, GB/s)
PEAK_GBS = [
    ("h100 pcie", "", "", 2000.0),
    ("h100", "", "nvl", 3350.0),
    ("h200", "", "nvl", 4800.0),
    ("a100", "80gb", "pcie", 2039.0),
    ("a100", "80gb", "", 1935.0),
    ("a100", "", "", 1555.0),
    ("l40s", "", "", 864.0),
    ("rtx 4090", "", "", 1008.0),
]
COLUMN = {"bf16": 2, "fp16": 2, "tf32": 3, "fp32": 4}


def device_peaks(name, precision):
    """(FLOP/s, bytes/s) of a device by name, 0 where unknown (as perf.cpp's peak_flops and
    peak_bytes_per_s)."""
    n = name.lower()
    flops = 0.0
    for row in PEAK_TFLOPS:
        if row[0] in n and not (row[1] and row[1] in n):
            flops = row[COLUMN[precision]] * 1e12 if precision in COLUMN else 0.0
            break
    gbs = 0.0
    for must, also, without, v in PEAK_GBS:
        if must in n and (not also or also in n) and not (without and without in n):
            gbs = v * 1e9
            break
    return flops, gbs


def read_profile(path):
    """The profile run to read: trainrt-op-profile/1 as it is, or the last run of a
    trainrt-bench-profile/1 (the config's thread count)."""
    with open(path) as f:
        doc = json.load(f)
    schema = doc.get("schema")
    if schema == "trainrt-bench-profile/1":
        if not doc.get("runs"):
            raise ValueError("the profile has no runs")
        return doc["runs"][-1]
    if schema == "trainrt-op-profile/1":
        return doc
    raise ValueError(f"not a trainrt profile (schema {schema!r})")


def op_rows(run):
    """Per label, summed over the layers: calls, seconds, FLOPs, bytes."""
    rows = {}
    for o in run["ops"]:
        r = rows.setdefault(o["label"], dict(label=o["label"], op=o["op"], calls=0, seconds=0.0,
                                             flops=0.0, bytes=0.0))
        r["calls"] += o["calls"]
        for k in ("seconds", "flops", "bytes"):
            r[k] += o[k] or 0.0
    return list(rows.values())


def floors(run, peak_flops, peak_bytes):
    """The op rows with floor_s, over_s (measured - floor) added, ranked by the time lost."""
    rows = op_rows(run)
    for r in rows:
        compute = r["flops"] / peak_flops if peak_flops > 0 else 0.0
        memory = r["bytes"] / peak_bytes if peak_bytes > 0 else 0.0
        r["floor_s"] = max(compute, memory)
        r["bound"] = "compute" if compute >= memory and compute > 0 else "memory"
        r["over_s"] = r["seconds"] - r["floor_s"]
    rows.sort(key=lambda r: -r["over_s"])
    return rows


def report(run, peak_flops, peak_bytes, top, source):
    """The markdown lines and the summary dict."""
    steps = max(1, run.get("steps", 1))
    ms = lambda s: 1e3 * s / steps  # noqa: E731 - per step
    rows = floors(run, peak_flops, peak_bytes)
    lost = sum(max(0.0, r["over_s"]) for r in rows)
    wall, op_s = run["wall_s"], run["op_s"]
    floor_s = sum(r["floor_s"] for r in rows)
    between = wall - op_s
    tokens = run.get("tokens_per_step", 0)
    against = (f"against peaks {peak_flops / 1e12:.4g} TFLOP/s and {peak_bytes / 1e9:.4g} GB/s "
               f"({source})" if peak_flops > 0 or peak_bytes > 0
               else "without peaks (none known for this device): every floor is 0")
    lines = [
        f"Roofline of {run.get('device_name', '?')} ({run.get('precision', '?')}, "
        f"{run.get('timing', 'host')} timing, {steps} profiled step(s)) {against}.",
        "",
        "| op | calls/step | ms/step | floor ms | bound | x floor | ms over floor | % of lost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows[:top]:
        ratio = f"{r['seconds'] / r['floor_s']:.1f}" if r["floor_s"] > 0 else ""
        share = f"{100 * max(0.0, r['over_s']) / lost:.1f}" if lost > 0 else ""
        lines.append(f"| {r['label']} | {r['calls'] / steps:.0f} | {ms(r['seconds']):.3f} | "
                     f"{ms(r['floor_s']):.3f} | {r['bound']} | {ratio} | {ms(r['over_s']):.3f} | "
                     f"{share} |")
    if len(rows) > top:
        rest = rows[top:]
        lines.append(f"| ({len(rest)} more ops) | | {ms(sum(r['seconds'] for r in rest)):.3f} | "
                     f"{ms(sum(r['floor_s'] for r in rest)):.3f} | | | "
                     f"{ms(sum(r['over_s'] for r in rest)):.3f} | |")
    lines.append(f"| (between the ops) | | {ms(between):.3f} | 0 | | | {ms(between):.3f} | |")
    lines.append(f"| **step** | | **{ms(wall):.3f}** | **{ms(floor_s):.3f}** | | "
                 f"{wall / floor_s if floor_s > 0 else 0:.1f} | {ms(wall - floor_s):.3f} | |")
    summary = dict(step_ms=ms(wall), floor_ms=ms(floor_s), between_ms=ms(between),
                   ops_over_floor_ms=ms(lost), tokens_per_step=tokens,
                   tokens_per_s=tokens / (wall / steps) if wall > 0 else 0.0,
                   floor_tokens_per_s=tokens / (floor_s / steps) if floor_s > 0 else 0.0)
    lines += ["", f"The floors allow {summary['floor_tokens_per_s']:,.0f} tok/s; measured "
              f"{summary['tokens_per_s']:,.0f} tok/s ({ms(wall):.3f} ms a step: "
              f"{ms(floor_s):.3f} ms of floors, {ms(lost):.3f} ms of ops above them, "
              f"{ms(between):.3f} ms between the ops)."]
    return lines, dict(summary, rows=rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--device", help="peaks of this device name (the table of perf.cpp)")
    ap.add_argument("--precision", help="the peak column with --device (default: the profile's)")
    ap.add_argument("--peak-tflops", type=float)
    ap.add_argument("--peak-gbs", type=float)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.top < 1:
        ap.error("--top must be positive")
    try:
        run = read_profile(args.profile)
    except (OSError, ValueError, KeyError) as exc:
        print(f"roofline: cannot read {args.profile}: {exc}", file=sys.stderr)
        return 2
    peak_flops = run.get("peak_flops") or 0.0
    peak_bytes = run.get("peak_bytes_per_s") or 0.0
    source = "the profile's device"
    if args.device:
        precision = args.precision or run.get("precision", "bf16")
        if precision not in COLUMN:
            ap.error(f"--precision {precision!r}: bf16, fp16, tf32 or fp32")
        peak_flops, peak_bytes = device_peaks(args.device, precision)
        source = f"the table's {args.device!r}, {precision}"
        if peak_flops == 0 and peak_bytes == 0:
            print(f"roofline: {args.device!r} is not in the table: give --peak-tflops and "
                  "--peak-gbs", file=sys.stderr)
            return 2
    if args.peak_tflops is not None:
        peak_flops, source = args.peak_tflops * 1e12, "given"
    if args.peak_gbs is not None:
        peak_bytes, source = args.peak_gbs * 1e9, "given"
    if peak_flops <= 0 and peak_bytes <= 0:
        print("roofline: no peaks: the profile's device has none in the table; give --device or "
              "--peak-tflops and --peak-gbs", file=sys.stderr)
        return 2
    lines, summary = report(run, peak_flops, peak_bytes, args.top, source)
    print("\n".join(lines))
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(dict(summary, peak_flops=peak_flops, peak_bytes_per_s=peak_bytes), f, indent=1)
        import os
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

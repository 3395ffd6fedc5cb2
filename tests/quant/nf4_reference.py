#!/usr/bin/env python3
"""lora.base_dtype's quantisers (src/core/base_quant.h) against numpy references written here
from the definitions (QLoRA's NF4 as bitsandbytes builds it; its double quantisation with
bitsandbytes' dynamic map; per-row int8; bf16): codes, scales and dequantised values equal
element for element. quant_dump (tests/quant/quant_dump.cpp) runs our side.

    /usr/bin/python3 tests/quant/nf4_reference.py --tool build/tests/quant_dump --workdir /tmp/q

Needs numpy (Debian's python3-numpy, beside python3-torch); torch builds the dynamic map as
bitsandbytes does (skipped with a note when torch is missing). Exit 77 without numpy.
"""
import argparse
import os
import statistics
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("nf4_reference: numpy is not installed (Debian: python3-numpy); skipped")
    sys.exit(77)

F32 = np.float32


# ---------------------------------------------------------------- the tables

def nf4_code_book():
    """bitsandbytes' create_normal_map(offset=0.9677083, use_extra_value=True): the N(0,1)
    quantiles of 8 probabilities from the offset down to 0.5 (of 9, the last dropped), 7
    negated ones (of 8), a zero; rounded to fp32, sorted and divided by the largest in fp32. fp32 linspace as torch's
    (start + i * step below the middle, end - (n - 1 - i) * step from it)."""
    def linspace32(a, b, n):
        a, b = F32(a), F32(b)
        step = (b - a) / F32(n - 1)
        half = n // 2
        return [a + F32(i) * step if i < half else b - F32(n - 1 - i) * step for i in range(n)]
    ppf = statistics.NormalDist().inv_cdf
    offset = 0.9677083
    pos = [ppf(float(p)) for p in linspace32(offset, 0.5, 9)[:-1]]
    neg = [-ppf(float(p)) for p in linspace32(offset, 0.5, 8)[:-1]]
    v = np.array(sorted(pos + [0.0] + neg), dtype=F32)  # torch.Tensor: fp32 first
    return (v / v.max()).astype(F32)  # then divided in fp32


def dynamic_map():
    """bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), with
    torch's fp32 arithmetic (None without torch)."""
    try:
        import torch
    except ImportError:
        return None
    data = []
    for i in range(7):
        b = torch.linspace(0.1, 1, 2 ** i + 1, dtype=torch.float32)
        means = (b[:-1] + b[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0.0, 1.0]
    data.sort()
    assert len(data) == 256
    return np.array(data, dtype=F32)


def midpoints(values):
    return ((values[:-1] + values[1:]) / F32(2)).astype(F32)


def nearest(scaled, values):
    """The number of fp32 midpoints each value is strictly above (ties go down)."""
    mids = midpoints(values)
    return (scaled[:, None] > mids[None, :]).sum(axis=1).astype(np.uint8)


# ---------------------------------------------------------------- the references

def ref_nf4(x, book):
    n = x.size
    blocks = (n + 63) // 64
    codes = np.full(n + (n & 1), 7, dtype=np.uint8)
    absmax = np.zeros(blocks, dtype=F32)
    for b in range(blocks):
        blk = x[b * 64:(b + 1) * 64]
        a = F32(np.max(np.abs(blk)))
        absmax[b] = a
        with np.errstate(over="ignore", divide="ignore"):
            inv = F32(1) / a if a > 0 else F32(0)
        if a > 0 and np.isfinite(inv):  # else (0, or 1/a overflows) a zero block: codes 7
            codes[b * 64:b * 64 + blk.size] = nearest((blk * inv).astype(F32), book)
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    return packed, absmax, codes[:n]


def ref_double_quant(absmax, dmap):
    offset = F32(np.mean(absmax.astype(np.float64)))
    centred = (absmax - offset).astype(F32)
    nb = absmax.size
    codes = np.full(nb, 127, dtype=np.uint8)
    absmax2 = np.zeros((nb + 255) // 256, dtype=F32)
    for b in range(absmax2.size):
        blk = centred[b * 256:(b + 1) * 256]
        a = F32(np.max(np.abs(blk)))
        absmax2[b] = a
        with np.errstate(over="ignore", divide="ignore"):
            inv = F32(1) / a if a > 0 else F32(0)
        if a > 0 and np.isfinite(inv):
            codes[b * 256:b * 256 + blk.size] = nearest((blk * inv).astype(F32), dmap)
    recovered = np.array([F32(F32(dmap[codes[i]] * absmax2[i // 256]) + offset)
                          for i in range(nb)], dtype=F32)
    return codes, absmax2, offset, recovered


def ref_int8(w):
    s = np.max(np.abs(w), axis=1).astype(F32)
    with np.errstate(over="ignore"):
        k = np.where(s > 0, F32(127) / np.where(s > 0, s, F32(1)), F32(0)).astype(F32)
    k = np.where(np.isfinite(k), k, F32(0)).astype(F32)  # 127 / s overflows: a zero row
    q = np.rint((w * k[:, None]).astype(F32)).astype(np.int8)  # rint: half to even
    deq = ((q.astype(F32) * s[:, None]).astype(F32) * F32(1.0 / 127.0)).astype(F32)
    return q, s, deq


def bf16(x):
    u = x.astype(F32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


# ---------------------------------------------------------------- inputs

def midpoint_block(book, rng):
    """absmax 1 (scaled = x exactly): every midpoint, and one ulp either side of it."""
    vals = [F32(1.0)]
    for m in midpoints(book):
        vals += [m, np.nextafter(m, F32(-2)), np.nextafter(m, F32(2))]
    vals += [F32(-0.0), F32(0.0), F32(-1.0)]
    x = np.array(vals, dtype=F32)
    return np.concatenate([x, rng.uniform(-1, 1, 64 * 3 - x.size).astype(F32)])


def cases(book, rng):
    """(name, cols, [rows per tensor], values)."""
    out = []
    normal = lambda n, s=0.02: (rng.standard_normal(n) * s).astype(F32)
    out.append(("normal 48x64", 64, [48], normal(48 * 64)))
    # in % 64 != 0: blocks cross rows; odd element counts (a low nibble of padding).
    out.append(("odd 7x37", 37, [7], normal(7 * 37, 1.0)))
    # bf16-valued weights (a bf16 checkpoint), with outliers.
    w = normal(33 * 96)
    w[::97] *= 40
    out.append(("bf16 values 33x96", 96, [33], (bf16(w).astype(np.uint32) << 16).view(F32)))
    # Zero blocks, negative zeros, a zero row.
    z = normal(16 * 64)
    z[64:192] = 0.0
    z[200:264] = F32(-0.0)
    # A block and a row of subnormal values (1 / absmax overflows: quantised as zeros).
    z[320:384] = np.float32(1e-39) * np.arange(64, dtype=np.float32) / 64
    out.append(("zeros 16x64", 64, [16], z))
    # Every midpoint and its neighbours.
    out.append(("midpoints 3x64", 64, [3], midpoint_block(book, rng)))
    # A fused matrix: three tensors of odd size, each its own blocks (q, k, v of a model).
    out.append(("fused 5+3+3 x 29", 29, [5, 3, 3], normal(11 * 29, 0.5)))
    # Enough blocks for several second-level blocks of 256 (and a partial one).
    big = normal(300 * 128)
    big[5000:5128] *= 100
    out.append(("dq 300x128", 128, [300], big))
    return out


# ---------------------------------------------------------------- the check

def read(path, dtype):
    return np.fromfile(path, dtype=dtype)


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def equal(self, what, got, want):
        self.checks += 1
        got = np.asarray(got)
        want = np.asarray(want)
        if got.shape != want.shape or not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
            self.failures += 1
            where = ""
            if got.shape == want.shape:
                bad = np.nonzero(got.view(np.uint8) != want.view(np.uint8))[0]
                where = f" (first differing byte {bad[0]} of {got.nbytes})" if bad.size else ""
            print(f"FAIL {what}: shapes {got.shape} vs {want.shape}{where}")


def run_case(tool, workdir, ck, type_name, dq, name, cols, rows, x, book, dmap):
    tag = f"{type_name}{'-dq' if dq else ''} {name}"
    stem = os.path.join(workdir, tag.replace(" ", "_").replace("+", "p"))
    x.astype(F32).tofile(stem + ".in")
    subprocess.run([tool, type_name, str(int(dq)), str(cols), stem + ".in", stem] +
                   [str(r) for r in rows], check=True)
    data = read(stem + ".data", np.uint8)
    deq = read(stem + ".deq", F32)
    total_rows = sum(rows)
    if type_name == "bf16":
        ck.equal(tag + " bits", data.view(np.uint16), bf16(x))
        ck.equal(tag + " dequantised", deq, (bf16(x).astype(np.uint32) << 16).view(F32))
        return
    if type_name == "int8":
        q, s, want = ref_int8(x.reshape(total_rows, cols))
        ck.equal(tag + " codes", data.view(np.int8), q.reshape(-1))
        ck.equal(tag + " scales", read(stem + ".scales", F32), s)
        ck.equal(tag + " dequantised", deq, want.reshape(-1))
        return
    # nf4: each tensor alone, its codes from a byte boundary.
    packed_all, absmax_all, codes_all, deq_all = [], [], [], []
    dq_codes, dq_scales2, offsets = [], [], []
    at = 0
    for r in rows:
        t = x[at:at + r * cols]
        at += r * cols
        packed, absmax, _ = ref_nf4(t, book)
        packed_all.append(packed)
        absmax_all.append(absmax)
        used = absmax
        if dq:
            c, a2, off, used = ref_double_quant(absmax, dmap)
            dq_codes.append(c)
            dq_scales2.append(a2)
            offsets.append(off)
        # Dequantised from the codes just packed: one fp32 product each.
        codes = np.empty(packed.size * 2, dtype=np.uint8)
        codes[0::2] = packed >> 4
        codes[1::2] = packed & 15
        codes = codes[:t.size]
        blocks = np.arange(t.size) // 64
        deq_all.append((book[codes] * used[blocks]).astype(F32))
    ck.equal(tag + " codes", data, np.concatenate(packed_all))
    if dq:
        ck.equal(tag + " absmax codes", read(stem + ".scale_codes", np.uint8),
                 np.concatenate(dq_codes))
        ck.equal(tag + " absmax2", read(stem + ".scales2", F32), np.concatenate(dq_scales2))
        parts = read(stem + ".parts", np.float64).reshape(-1, 5)
        ck.equal(tag + " offsets", parts[:, 4].astype(F32), np.array(offsets, dtype=F32))
    else:
        ck.equal(tag + " absmax", read(stem + ".scales", F32), np.concatenate(absmax_all))
    ck.equal(tag + " dequantised", deq, np.concatenate(deq_all))
    # Within the code book's step of the input: |x - deq| <= absmax * (largest gap / 2).
    if not dq:
        gap = F32(np.max(np.diff(book)) / 2)
        at = 0
        worst = 0.0
        for r, absmax in zip(rows, absmax_all):
            t = x[at:at + r * cols]
            d = deq[at:at + r * cols]
            at += r * cols
            a = absmax[np.arange(t.size) // 64]
            # A block below FLT_MIN is quantised as zeros: off by at most its absmax.
            bound = np.where(a < np.finfo(np.float32).tiny, a, a * gap * F32(1.0001))
            worst = max(worst, float(np.max(np.abs(t - d) - bound)))
        ck.checks += 1
        if worst > 0:
            ck.failures += 1
            print(f"FAIL {tag}: a dequantised value is more than half a code-book step away")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="the quant_dump executable")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ck = Checker()
    book = nf4_code_book()
    stem = os.path.join(args.workdir, "tables")
    subprocess.run([args.tool, "tables", stem], check=True)
    ck.equal("the NF4 code book (create_normal_map)", read(stem + ".book", F32), book)
    dmap = dynamic_map()
    ours_map = read(stem + ".map", F32)
    if dmap is None:
        print("nf4_reference: torch is missing: the dynamic map is checked against itself only")
        dmap = ours_map
    else:
        ck.equal("the dynamic map (create_dynamic_map)", ours_map, dmap)
    rng = np.random.default_rng(20261207)
    for name, cols, rows, x in cases(book, rng):
        for type_name, dq in (("nf4", False), ("nf4", True), ("int8", False), ("bf16", False)):
            run_case(args.tool, args.workdir, ck, type_name, dq, name, cols, rows, x, book, dmap)
    print(f"nf4_reference: {ck.checks} checks, {ck.failures} failed")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())

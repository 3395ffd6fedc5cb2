#!/usr/bin/python3
"""Loss masks (issue 40) against PyTorch: trainrt's masked step, driven through the Python
binding (`Session.step_masked`), against the GPT-2 and Llama of gpt2_reference.py /
llama_reference.py trained with a cross-entropy whose ignored targets (ignore_index in
PyTorch's terms) count for nothing and whose mean is over the counted targets of the WHOLE
optimizer step — every micro-batch — as transformers computes it since 4.46 (a mean per
micro-batch, divided by grad_accum, weighs a micro-batch of few targets as much as one of
many: the bug this is the test of).

Per case: grad_accum 2, B4 T32, 12 steps on the sequential sampler's windows; each row masks a
prompt of random length (its completion counts) and some rows count nothing at all, so the
micro-batches of a step count very different numbers of targets. Per step: loss <= 1e-5
relative, lr <= 1e-6, grad_norm <= 1e-4. The same reference with a per-micro-batch mean must
miss trainrt by more than the loss tolerance (else the test could not see that bug).

Packed cases (step_masked's positions): every row holds several examples of 4 .. 16 tokens
back to back (some rows end in padding), positions restarting at 0 in each; the reference
(positions= of gpt2_logits / llama_logits: wpe or RoPE at the restarted positions, a
block-diagonal causal mask from reference_common.packed_causal_mask) trains with
torch.nn.functional.cross_entropy(ignore_index=-100, reduction="sum") / the step's count. The
same tolerances; a reference that ignores the packing (one causal sequence per row, positions
0 .. T-1) must miss. And trainrt alone: the same examples one per row (padded, no positions,
more micro-batches) train as the packed rows — per-step loss within 1e-6, grad_norm 1e-5.

Usage:
    /usr/bin/python3 tests/reference/masked_reference.py --lib-dir build \\
        --bindings bindings/python --workdir /tmp/masked_ref

Exit status: 0 pass, 1 mismatch or trainrt failure, 77 torch unavailable (CTest skip).
"""

import argparse
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Exits 77 when torch/numpy cannot be imported.
from reference_common import (BATCH, DATA_SEED, OPTIM, SEQ, SequentialSampler,  # noqa: E402
                              TRAIN_TOKENS, VAL_TOKENS, lr_at, make_tokens, read_shard, rel,
                              toml_config, write_shard, write_safetensors)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import gpt2_reference as gpt2  # noqa: E402
import llama_reference as llama  # noqa: E402

STEPS, GRAD_ACCUM = 12, 2
LOSS_RTOL, LR_RTOL, GNORM_RTOL = 1e-5, 1e-6, 1e-4
MASK_SEED = 40
PACK_SEED, MIN_EXAMPLE, MAX_EXAMPLE = 41, 4, 16  # tokens per packed example
# packed vs one example per row, trainrt against itself (only the order of the sums differs)
PAD_LOSS_RTOL, PAD_GNORM_RTOL = 1e-6, 1e-5
IGNORE = -100  # torch's default ignore_index


def masks_for(steps, grad_accum, B, T, seed):
    """[step][micro-batch] (B, T) 0/1 masks: row b counts the targets after a prompt of
    1 .. T-1 tokens; one row in five counts nothing. Every step counts something."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(steps):
        step = []
        for _ in range(grad_accum):
            m = np.zeros((B, T), dtype=np.uint8)
            for b in range(B):
                if rng.rand() < 0.2:
                    continue
                m[b, rng.randint(1, T):] = 1
            step.append(m)
        assert sum(int(m.sum()) for m in step) > 0
        out.append(step)
    return out


def window_micro_batches(batches, masks):
    """The sequential sampler's (x, y) windows and their masks as micro-batches: dicts of
    tokens (B, T+1), mask (B, T) and positions (None: 0 .. T-1)."""
    return [[dict(tokens=torch.cat([x, y[:, -1:]], dim=1).numpy(), mask=m, positions=None)
             for (x, y), m in zip(step, ms)] for step, ms in zip(batches, masks)]


def packed_examples(stream, steps, rows, T, seed):
    """[step][row] -> [(ids, prompt)]: each row holds examples of MIN_EXAMPLE .. MAX_EXAMPLE
    tokens cut one after the other from stream, at most T + 1 tokens in all (the last token of
    a full row is a target only); a row stops after an example with probability 0.12, or when
    fewer than MIN_EXAMPLE tokens are left (padding after it: half the rows). An example's
    targets after its first `prompt` tokens count; one in seven counts none
    (prompt = its length). Every step counts something."""
    rng = np.random.RandomState(seed)
    cursor, out = 0, []
    for _ in range(steps):
        step = []
        for _ in range(rows):
            row, used = [], 0
            while T + 1 - used >= MIN_EXAMPLE and not (row and rng.rand() < 0.12):
                L = min(rng.randint(MIN_EXAMPLE, MAX_EXAMPLE + 1), T + 1 - used)
                ids = stream[cursor:cursor + L]
                cursor += L
                assert len(ids) == L, "stream too short"
                prompt = L if rng.rand() < 1 / 7 else rng.randint(1, L)
                row.append((ids, prompt))
                used += L
            step.append(row)
        assert any(p < len(ids) for row in step for ids, p in row)
        out.append(step)
    return out


def row_arrays(examples, T, packed):
    """One row of step_masked: tokens (T+1), mask (T), positions (T) of examples laid back to
    back. An example of L tokens at offset o: slots o .. o+L-2 predict its tokens 1 .. L-1
    (counting from its prompt on); slot o+L-1, its last token as input, predicts the next
    example's first token and never counts. Positions restart at 0 in each example and in
    the padding after the last (packed); unpacked rows (one example) keep 0 .. T-1."""
    tokens = np.zeros(T + 1, dtype=np.int32)
    mask = np.zeros(T, dtype=np.uint8)
    positions = np.arange(T, dtype=np.int32)
    o = 0
    for ids, prompt in examples:
        L = len(ids)
        tokens[o:o + L] = ids
        for t in range(L - 1):
            mask[o + t] = 1 if t + 1 >= prompt else 0
        slots = min(L, T - o)
        if packed:
            positions[o:o + slots] = np.arange(slots)
        o += L
    if packed and o < T:
        positions[o:] = np.arange(T - o)  # padding: a run of its own, nothing counts
    return tokens, mask, positions


def packed_micro_batches(examples, B, T):
    """[step][micro-batch] of B packed rows each (positions given)."""
    out = []
    for step in examples:
        micro = []
        for k in range(0, len(step), B):
            rows = [row_arrays(r, T, packed=True) for r in step[k:k + B]]
            micro.append(dict(tokens=np.stack([r[0] for r in rows]),
                              mask=np.stack([r[1] for r in rows]),
                              positions=np.stack([r[2] for r in rows])))
        out.append(micro)
    return out


def padded_micro_batches(examples, B, T):
    """The same examples one per row (no positions), in as many micro-batches of B rows as the
    fullest step needs; the rows left over count nothing. Returns (micro-batches, grad_accum)."""
    per_step = [[e for row in step for e in row] for step in examples]
    grad_accum = max(math.ceil(len(s) / B) for s in per_step)
    out = []
    for step in per_step:
        rows = [row_arrays([e], T, packed=False) for e in step]
        rows += [row_arrays([], T, packed=False)] * (grad_accum * B - len(rows))
        out.append([dict(tokens=np.stack([r[0] for r in rows[k:k + B]]),
                         mask=np.stack([r[1] for r in rows[k:k + B]]), positions=None)
                    for k in range(0, grad_accum * B, B)])
    return out, grad_accum


def train_masked(init, logits_fn, micro_batches, o, per_micro_batch_mean=False,
                 ignore_packing=False):
    """AdamW (decay on >= 2-dim tensors), global-norm clip, warmup + cosine, as
    reference_common.train_reference; the loss of a step is the cross-entropy summed over the
    counted targets of all its micro-batches (ignore_index for the rest) / their count
    (per_micro_batch_mean: each micro-batch's masked mean / grad_accum, the pre-4.46
    transformers behaviour; ignore_packing: positions dropped, each row one sequence — both
    are the wrong models trainrt must not match)."""
    params = {n: t.clone().requires_grad_(True) for n, t in init.items()}
    decay = [t for t in params.values() if t.dim() >= 2]
    no_decay = [t for t in params.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": o["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    plist = list(params.values())
    records = []
    steps = len(micro_batches)
    for step in range(1, steps + 1):
        opt.zero_grad(set_to_none=True)
        micro = micro_batches[step - 1]
        count = sum(int(mb["mask"].sum()) for mb in micro)
        total = 0.0
        for mb in micro:
            tokens = torch.from_numpy(mb["tokens"].astype(np.int64))
            x, y = tokens[:, :-1], tokens[:, 1:].clone()
            mask = torch.from_numpy(mb["mask"]).bool()
            y[~mask] = IGNORE
            pos = mb["positions"]
            pos = None if pos is None or ignore_packing else torch.from_numpy(
                pos.astype(np.int64))
            logits = logits_fn(params, x, pos)
            nll_sum = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=IGNORE,
                reduction="sum")
            if per_micro_batch_mean:
                n = max(int(mask.sum()), 1)
                (nll_sum / n / len(micro)).backward()
                total += nll_sum.item() / n / len(micro)
            else:
                (nll_sum / count).backward()
                total += nll_sum.item()
        norm = torch.nn.utils.clip_grad_norm_(plist, o["grad_clip"]).item()
        lr = lr_at(step, steps, o)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        records.append(dict(step=step, loss=total if per_micro_batch_mean else total / count,
                            lr=lr, grad_norm=norm))
    return records


def train_trainrt(trainrt, config_text, workdir, micro_batches):
    """The same steps through the Python binding's step_masked."""
    cfg = trainrt.Config.from_string(config_text, base_dir=workdir)
    records = []
    with trainrt.Session(cfg) as s:
        for step, micro in enumerate(micro_batches, start=1):
            tokens = np.concatenate([mb["tokens"] for mb in micro]).astype(np.int32)
            mask = np.concatenate([mb["mask"] for mb in micro])
            positions = None if micro[0]["positions"] is None else np.concatenate(
                [mb["positions"] for mb in micro]).astype(np.int32)
            r = s.step_masked(tokens, mask, positions)
            records.append(dict(step=step, loss=r.loss, lr=r.lr, grad_norm=r.grad_norm))
    cfg.close()
    return records


def worst_diff(a, b, keys=("loss", "lr", "grad_norm")):
    return {k: max(rel(x[k], y[k]) for x, y in zip(a, b)) for k in keys}


def packing_self_check(logits_fn, init, micro):
    """The reference's packed rows against its plain path: each example of a packed row gives
    the logits it gives alone (at its own length, positions 0 ..); the padding after it does
    not reach it; and a row read as one sequence differs (else packing would go unseen)."""
    with torch.no_grad():
        tokens = torch.from_numpy(micro["tokens"].astype(np.int64))[:, :-1]
        pos = torch.from_numpy(micro["positions"].astype(np.int64))
        packed = logits_fn(init, tokens, pos)
        whole = logits_fn(init, tokens, None)
        T = tokens.shape[1]
        seen = 0
        for b in range(tokens.shape[0]):
            starts = [t for t in range(T) if pos[b, t] == 0] + [T]
            for s, e in zip(starts, starts[1:]):
                alone = logits_fn(init, tokens[b:b + 1, s:e], None)[0]
                assert torch.allclose(packed[b, s:e], alone, rtol=0, atol=1e-5), (b, s, e)
                seen += 1
        assert seen > tokens.shape[0], "rows should hold several examples"
        assert (packed - whole).abs().max() > 1e-3, "packing changes nothing?"


def report(ok, name, ref, worst, miss_lines):
    print(f"{'ok  ' if ok else 'FAIL'} {name}: loss {ref[0]['loss']:.4f} -> {ref[-1]['loss']:.4f}; "
          f"worst rel. diff loss {worst['loss']:.2e} (<= {LOSS_RTOL:g}), lr {worst['lr']:.2e}, "
          f"grad_norm {worst['grad_norm']:.2e} (<= {GNORM_RTOL:g}); " + "; ".join(miss_lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib-dir", required=True, help="folder holding libtrainrt.so")
    ap.add_argument("--bindings", required=True, help="bindings/python")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.environ["TRAINRT_LIB_DIR"] = os.path.abspath(args.lib_dir)
    sys.path.insert(0, os.path.abspath(args.bindings))
    import trainrt  # noqa: E402 - after TRAINRT_LIB_DIR is set

    torch.manual_seed(0)
    torch.set_num_threads(1)
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)

    vocab = gpt2.MODEL["vocab_size"]
    llama_cfg = llama.model_cfg("gqa_untied")
    assert llama_cfg["vocab_size"] == vocab
    rng = np.random.RandomState(DATA_SEED + 1)
    write_shard(os.path.join(workdir, "train.bin"), make_tokens(TRAIN_TOKENS, vocab, rng))
    write_shard(os.path.join(workdir, "val.bin"), make_tokens(VAL_TOKENS, vocab, rng))
    shards = [read_shard(os.path.join(workdir, "train.bin"))]
    sampler = SequentialSampler(shards, BATCH, SEQ)
    batches = [[sampler.next() for _ in range(GRAD_ACCUM)] for _ in range(STEPS)]
    masks = masks_for(STEPS, GRAD_ACCUM, BATCH, SEQ, MASK_SEED)
    windows = window_micro_batches(batches, masks)
    counts = [[int(m.sum()) for m in step] for step in masks]
    print(f"B{BATCH} T{SEQ} grad_accum {GRAD_ACCUM}, {STEPS} steps; counted targets per "
          f"micro-batch: {counts}")

    # Packed rows: examples cut from a chain of their own (so the loss falls).
    stream = make_tokens(STEPS * GRAD_ACCUM * BATCH * (SEQ + 1), vocab,
                         np.random.RandomState(PACK_SEED))
    examples = packed_examples(stream, STEPS, GRAD_ACCUM * BATCH, SEQ, PACK_SEED)
    packed = packed_micro_batches(examples, BATCH, SEQ)
    padded, pad_accum = padded_micro_batches(examples, BATCH, SEQ)
    per_row = [len(r) for step in examples for r in step]
    print(f"packed: {sum(per_row)} examples in {len(per_row)} rows ({min(per_row)} .. "
          f"{max(per_row)} a row), counted targets per step "
          f"{[sum(int(mb['mask'].sum()) for mb in step) for step in packed]}; padded: one "
          f"example a row, grad_accum {pad_accum}")

    models = [
        ("gpt2", gpt2.hf_param_shapes(gpt2.MODEL), gpt2.init_params(gpt2.MODEL, gpt2.INIT_SEED),
         lambda p, x, pos: gpt2.gpt2_logits(p, gpt2.MODEL, x, pos), gpt2.model_toml, OPTIM),
        ("llama_gqa", llama.llama_param_shapes(llama_cfg),
         llama.init_params(llama_cfg, llama_cfg["seed"]),
         lambda p, x, pos: llama.llama_logits(p, llama_cfg, x, pos),
         lambda f: llama.model_toml(llama_cfg, f), llama.OPTIM),
    ]
    failed = False
    for model, shapes, init, logits_fn, model_toml, o in models:
        init_file = f"init_{model}.safetensors"
        write_safetensors(os.path.join(workdir, init_file), [(n, init[n]) for n, _ in shapes])
        packing_self_check(logits_fn, init, packed[0][0])

        def config(case, grad_accum):
            return toml_config("masked_reference.py", model_toml(init_file), case, STEPS,
                               grad_accum, o, checkpoint=False)

        def trainrt_run(name, case, grad_accum, micro):
            try:
                return train_trainrt(trainrt, config(case, grad_accum), workdir, micro)
            except trainrt.Error as e:
                print(f"FAIL {name}: trainrt: {e}")
                return None

        # Masked windows (no packing).
        name = f"{model}_masked"
        ref = train_masked(init, logits_fn, windows, o)
        wrong = train_masked(init, logits_fn, windows, o, per_micro_batch_mean=True)
        trt = trainrt_run(name, name, GRAD_ACCUM, windows)
        if trt is None:
            failed = True
        else:
            worst = worst_diff(trt, ref)
            miss = worst_diff(trt, wrong, ("loss",))["loss"]
            ok = (worst["loss"] <= LOSS_RTOL and worst["lr"] <= LR_RTOL
                  and worst["grad_norm"] <= GNORM_RTOL and miss > LOSS_RTOL)
            failed |= not ok
            report(ok, name, ref, worst, [f"a per-micro-batch mean would miss by {miss:.2e} "
                                          f"(must be > {LOSS_RTOL:g})"])
            if not ok:
                print_steps(ref, trt)

        # Packed rows.
        name = f"{model}_packed"
        ref = train_masked(init, logits_fn, packed, o)
        unpacked = train_masked(init, logits_fn, packed, o, ignore_packing=True)
        wrong = train_masked(init, logits_fn, packed, o, per_micro_batch_mean=True)
        trt = trainrt_run(name, name, GRAD_ACCUM, packed)
        pad = trainrt_run(f"{model}_padded", f"{model}_padded", pad_accum, padded)
        if trt is None or pad is None:
            failed = True
            continue
        worst = worst_diff(trt, ref)
        miss_unpacked = worst_diff(trt, unpacked, ("loss",))["loss"]
        miss_mean = worst_diff(trt, wrong, ("loss",))["loss"]
        ok = (worst["loss"] <= LOSS_RTOL and worst["lr"] <= LR_RTOL
              and worst["grad_norm"] <= GNORM_RTOL and miss_unpacked > LOSS_RTOL
              and miss_mean > LOSS_RTOL)
        failed |= not ok
        report(ok, name, ref, worst, [
            f"rows read as one sequence would miss by {miss_unpacked:.2e}, a per-micro-batch "
            f"mean by {miss_mean:.2e} (both must be > {LOSS_RTOL:g})"])
        if not ok:
            print_steps(ref, trt)
        pw = worst_diff(pad, trt)
        ok = (pw["loss"] <= PAD_LOSS_RTOL and pw["grad_norm"] <= PAD_GNORM_RTOL
              and pw["lr"] <= LR_RTOL)
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {model}_packed_vs_padded (trainrt alone): worst rel. "
              f"diff loss {pw['loss']:.2e} (<= {PAD_LOSS_RTOL:g}), grad_norm "
              f"{pw['grad_norm']:.2e} (<= {PAD_GNORM_RTOL:g})")
        if not ok:
            print_steps(trt, pad, "packed", "padded")
    return 1 if failed else 0


def print_steps(a, b, name_a="torch", name_b="trainrt"):
    for r, t in zip(a, b):
        print(f"   step {r['step']:2d}: {name_a} loss {r['loss']:.9f} {name_b} {t['loss']:.9f}"
              f"  grad_norm {r['grad_norm']:.6g} / {t['grad_norm']:.6g}")


if __name__ == "__main__":
    sys.exit(main())

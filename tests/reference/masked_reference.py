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


def train_masked(init, loss_fn, batches, masks, o, per_micro_batch_mean=False):
    """AdamW (decay on >= 2-dim tensors), global-norm clip, warmup + cosine, as
    reference_common.train_reference; the loss of a step is sum(nll · mask) / count over all
    its micro-batches (per_micro_batch_mean: each micro-batch's masked mean / grad_accum, the
    pre-4.46 transformers behaviour)."""
    params = {n: t.clone().requires_grad_(True) for n, t in init.items()}
    decay = [t for t in params.values() if t.dim() >= 2]
    no_decay = [t for t in params.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": o["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    plist = list(params.values())
    records = []
    steps = len(batches)
    for step in range(1, steps + 1):
        opt.zero_grad(set_to_none=True)
        micro = list(zip(batches[step - 1], masks[step - 1]))
        count = sum(int(m.sum()) for _, m in micro)
        total = 0.0
        for (x, y), m in micro:
            mask = torch.from_numpy(m).to(torch.float32)
            nll_sum = (loss_fn(params, x, y, per_token=True) * mask).sum()
            if per_micro_batch_mean:
                n = max(int(m.sum()), 1)
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


def train_trainrt(trainrt, config_text, workdir, batches, masks):
    """The same steps through the Python binding's step_masked."""
    cfg = trainrt.Config.from_string(config_text, base_dir=workdir)
    records = []
    with trainrt.Session(cfg) as s:
        for step, (micro, ms) in enumerate(zip(batches, masks), start=1):
            rows = [torch.cat([x, y[:, -1:]], dim=1) for x, y in micro]  # (B, T+1) each
            tokens = torch.cat(rows).numpy().astype(np.int32)
            mask = np.concatenate(ms)
            r = s.step_masked(tokens, mask)
            records.append(dict(step=step, loss=r.loss, lr=r.lr, grad_norm=r.grad_norm))
    cfg.close()
    return records


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
    counts = [[int(m.sum()) for m in step] for step in masks]
    print(f"B{BATCH} T{SEQ} grad_accum {GRAD_ACCUM}, {STEPS} steps; counted targets per "
          f"micro-batch: {counts}")

    cases = [
        ("gpt2_masked", gpt2.hf_param_shapes(gpt2.MODEL), gpt2.init_params(gpt2.MODEL, gpt2.INIT_SEED),
         lambda p, x, y, per_token=False: gpt2.gpt2_loss(p, gpt2.MODEL, x, y, per_token),
         gpt2.model_toml, OPTIM),
        ("llama_gqa_masked", llama.llama_param_shapes(llama_cfg),
         llama.init_params(llama_cfg, llama_cfg["seed"]),
         lambda p, x, y, per_token=False: llama.llama_loss(p, llama_cfg, x, y, per_token),
         lambda f: llama.model_toml(llama_cfg, f), llama.OPTIM),
    ]
    failed = False
    for name, shapes, init, loss_fn, model_toml, o in cases:
        init_file = f"init_{name}.safetensors"
        write_safetensors(os.path.join(workdir, init_file), [(n, init[n]) for n, _ in shapes])
        config_text = toml_config("masked_reference.py", model_toml(init_file), name, STEPS,
                                  GRAD_ACCUM, o, checkpoint=False)
        ref = train_masked(init, loss_fn, batches, masks, o)
        wrong = train_masked(init, loss_fn, batches, masks, o, per_micro_batch_mean=True)
        try:
            trt = train_trainrt(trainrt, config_text, workdir, batches, masks)
        except trainrt.Error as e:
            print(f"FAIL {name}: trainrt: {e}")
            failed = True
            continue
        worst = dict(loss=0.0, lr=0.0, grad_norm=0.0)
        for r, t in zip(ref, trt):
            for k in worst:
                worst[k] = max(worst[k], rel(t[k], r[k]))
        miss = max(rel(t["loss"], w["loss"]) for t, w in zip(trt, wrong))
        ok = (worst["loss"] <= LOSS_RTOL and worst["lr"] <= LR_RTOL
              and worst["grad_norm"] <= GNORM_RTOL and miss > LOSS_RTOL)
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: loss {ref[0]['loss']:.4f} -> {ref[-1]['loss']:.4f}; "
              f"worst rel. diff loss {worst['loss']:.2e} (<= {LOSS_RTOL:g}), lr {worst['lr']:.2e}, "
              f"grad_norm {worst['grad_norm']:.2e} (<= {GNORM_RTOL:g}); a per-micro-batch mean "
              f"would miss by {miss:.2e} (must be > {LOSS_RTOL:g})")
        if not ok:
            for r, t in zip(ref, trt):
                print(f"   step {r['step']:2d}: torch loss {r['loss']:.9f} trainrt {t['loss']:.9f}"
                      f"  grad_norm {r['grad_norm']:.6g} / {t['grad_norm']:.6g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

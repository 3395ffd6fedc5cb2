#!/usr/bin/env python3
"""A Llama-3.2-1B-shaped Hugging Face folder with random bf16 weights (no download: the
shapes, config.json and file layout of meta-llama/Llama-3.2-1B, values N(0, 0.02)), for
measuring what a QLoRA run of that model holds in memory (bench/qlora_memory/run.sh).

    /usr/bin/python3 bench/qlora_memory/make_model.py OUT_DIR [--layers 16]
"""
import argparse
import json
import os
import struct

import numpy as np

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 64, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
    "bos_token_id": 128000, "eos_token_id": 128001,
}


def shapes(c):
    C, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * c["head_dim"]
    out = [("model.embed_tokens.weight", (V, C))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (C,)),
                (p + "self_attn.q_proj.weight", (C, C)), (p + "self_attn.k_proj.weight", (kv, C)),
                (p + "self_attn.v_proj.weight", (kv, C)), (p + "self_attn.o_proj.weight", (C, C)),
                (p + "post_attention_layernorm.weight", (C,)),
                (p + "mlp.gate_proj.weight", (F, C)), (p + "mlp.up_proj.weight", (F, C)),
                (p + "mlp.down_proj.weight", (C, F))]
    out.append(("model.norm.weight", (C,)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=16)
    args = ap.parse_args()
    c = dict(CONFIG, num_hidden_layers=args.layers)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    header, offset = {}, 0
    for name, shape in shapes(c):
        n = int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(20261207)
    with open(os.path.join(args.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in shapes(c):
            n = int(np.prod(shape))
            for i in range(0, n, 1 << 24):  # 16 Mi values at a time
                m = min(1 << 24, n - i)
                x = (np.ones(m, np.float32) if "norm" in name
                     else rng.standard_normal(m, dtype=np.float32) * np.float32(0.02))
                u = x.view(np.uint32).astype(np.uint64)
                f.write(((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes())
    print(f"{args.out}: {offset / 2**30:.2f} GiB of bf16 weights")


if __name__ == "__main__":
    main()

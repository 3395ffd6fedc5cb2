#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/ (docs/FUZZING.md).

Small valid files in the layouts the library's own writers produce (docs/FORMATS.md), plus
near-valid ones (one rule broken each), so the fuzzers start past the first checks. The
output is deterministic: rerunning it rewrites the same bytes.
    python3 tests/fuzz/make_corpus.py [OUT_DIR]      (default: tests/fuzz/corpus)
"""
import hashlib
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def values(n, scale=1.0 / 16):
    return [((i * 7) % 17 - 8) * scale for i in range(n)]


# ------------------------------------------------------------------------- safetensors
def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, raw bytes)], laid out in order (write_safetensors)."""
    header, offset, data = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def bf16(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# ------------------------------------------------------------------------- GGUF
def gguf(kv, tensors, align=32, version=3):
    """kv: [(key, type id, packed value bytes)]; tensors: [(name, ne, ggml type, raw bytes)] laid
    out in order at multiples of `align` (src/io/gguf_writer.h)."""
    def s(x):
        x = x.encode()
        return struct.pack("<Q", len(x)) + x
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kv))
    for key, t, raw in kv:
        out += s(key) + struct.pack("<I", t) + raw
    offset, data = 0, b""
    for name, ne, t, raw in tensors:
        out += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", t, offset)
        data += raw + b"\0" * ((-len(raw)) % align)
        offset = len(data)
    out += b"\0" * ((-len(out)) % align)
    return out + data


def gguf_u32(v):
    return (4, struct.pack("<I", v))


def gguf_f32(v):
    return (6, struct.pack("<f", v))


def gguf_str(v):
    v = v.encode()
    return (8, struct.pack("<Q", len(v)) + v)


def q8_0(vals):
    """Q8_0 blocks of 32 (ggml_blocks.h): fp16 scale, 32 int8."""
    out = b""
    for b in range(0, len(vals), 32):
        blk = vals[b:b + 32]
        d = max(abs(v) for v in blk) / 127.0
        out += struct.pack("<e", d) + bytes((round(v / d) if d else 0) & 0xFF for v in blk)
    return out


def q4_0(vals):
    """Q4_0 blocks of 32: fp16 scale, 16 bytes (element j low nibble, j + 16 high), q + 8."""
    out = b""
    for b in range(0, len(vals), 32):
        blk = vals[b:b + 32]
        d = max(abs(v) for v in blk) / 8.0
        q = [min(15, max(0, int(round(v / d)) + 8)) if d else 8 for v in blk]
        out += struct.pack("<e", d) + bytes(q[j] | (q[j + 16] << 4) for j in range(16))
    return out


def gguf_model(arch, V, C, F, NH, NKV, L=1, T=8, tied=True, encode=None, qk_bias=False,
               drop=None, patch_kv=None):
    """A model file as trainrt export --gguf / llama.cpp's converter lays it out; matrices
    encoded by `encode` ((type id, fn) over rows; default F32), norms F32."""
    encode = encode or (0, f32)
    hs = C // NH
    kv = [("general.architecture", *gguf_str(arch)), (arch + ".context_length", *gguf_u32(T)),
          (arch + ".embedding_length", *gguf_u32(C)), (arch + ".block_count", *gguf_u32(L)),
          (arch + ".feed_forward_length", *gguf_u32(F)),
          (arch + ".attention.head_count", *gguf_u32(NH))]
    if arch == "gpt2":
        kv.append((arch + ".attention.layer_norm_epsilon", *gguf_f32(1e-5)))
    else:
        kv += [(arch + ".attention.head_count_kv", *gguf_u32(NKV)),
               (arch + ".attention.layer_norm_rms_epsilon", *gguf_f32(1e-5)),
               (arch + ".rope.freq_base", *gguf_f32(10000.0))]
    for key, (t, raw) in (patch_kv or {}).items():
        kv = [k for k in kv if k[0] != key] + [(key, t, raw)]
    mats, vecs = [("token_embd.weight", [V, C])], []
    if arch == "gpt2":
        vecs.append(("position_embd.weight", [T, C]))
    for l in range(L):
        b = "blk.%d." % l
        vecs.append((b + "attn_norm.weight", [C]))
        if arch == "gpt2":
            vecs += [(b + "attn_norm.bias", [C]), (b + "attn_qkv.bias", [3 * C]),
                     (b + "attn_output.bias", [C]), (b + "ffn_norm.bias", [C]),
                     (b + "ffn_up.bias", [F]), (b + "ffn_down.bias", [C])]
            mats += [(b + "attn_qkv.weight", [3 * C, C]), (b + "attn_output.weight", [C, C]),
                     (b + "ffn_up.weight", [F, C]), (b + "ffn_down.weight", [C, F])]
        else:
            mats += [(b + "attn_q.weight", [NH * hs, C]), (b + "attn_k.weight", [NKV * hs, C]),
                     (b + "attn_v.weight", [NKV * hs, C]), (b + "attn_output.weight", [C, NH * hs]),
                     (b + "ffn_gate.weight", [F, C]), (b + "ffn_up.weight", [F, C]),
                     (b + "ffn_down.weight", [C, F])]
            if qk_bias:
                vecs += [(b + "attn_q.bias", [NH * hs]), (b + "attn_k.bias", [NKV * hs]),
                         (b + "attn_v.bias", [NKV * hs])]
        vecs.append((b + "ffn_norm.weight", [C]))
    vecs.append(("output_norm.weight", [C]))
    if arch == "gpt2":
        vecs.append(("output_norm.bias", [C]))
    if not tied:
        mats.append(("output.weight", [V, C]))
    tensors = []
    for name, shape in mats + vecs:
        if drop and name == drop:
            continue
        vals = values(numel(shape))
        t, fn = encode if (name, shape) in mats else (0, f32)
        tensors.append((name, list(reversed(shape)), t, fn(vals)))
    return gguf(kv, tensors)


# ------------------------------------------------------------------------- GPT-2 tables
def param_table(V, maxT, L, C):
    """(name, shape) in ParamTable order (src/model/param_table.cpp)."""
    t = [("wte.weight", [V, C]), ("wpe.weight", [maxT, C])]
    for l in range(L):
        h = "h.%d." % l
        t += [(h + "ln_1.weight", [C]), (h + "ln_1.bias", [C]),
              (h + "attn.c_attn.weight", [C, 3 * C]), (h + "attn.c_attn.bias", [3 * C]),
              (h + "attn.c_proj.weight", [C, C]), (h + "attn.c_proj.bias", [C]),
              (h + "ln_2.weight", [C]), (h + "ln_2.bias", [C]),
              (h + "mlp.c_fc.weight", [C, 4 * C]), (h + "mlp.c_fc.bias", [4 * C]),
              (h + "mlp.c_proj.weight", [4 * C, C]), (h + "mlp.c_proj.bias", [C])]
    return t + [("ln_f.weight", [C]), ("ln_f.bias", [C])]


def hf_config(V, maxT, L, NH, C, dtype="float32"):
    """config.json as src/checkpoint/hf_config.cpp writes it."""
    return ("{\n"
            '  "architectures": ["GPT2LMHeadModel"],\n'
            '  "model_type": "gpt2",\n'
            '  "vocab_size": %d,\n  "n_positions": %d,\n  "n_ctx": %d,\n  "n_embd": %d,\n'
            '  "n_layer": %d,\n  "n_head": %d,\n  "n_inner": null,\n'
            '  "activation_function": "gelu_new",\n  "layer_norm_epsilon": 1e-05,\n'
            '  "resid_pdrop": 0.0,\n  "embd_pdrop": 0.0,\n  "attn_pdrop": 0.0,\n'
            '  "initializer_range": 0.02,\n  "tie_word_embeddings": true,\n'
            '  "torch_dtype": "%s"\n}\n' % (V, maxT, maxT, C, L, NH, dtype)).encode()


TINY_TOML = """[model]
vocab_size = 8
context_length = 4
n_layer = 1
n_head = 1
d_model = 4
"""


def state_json(step=3, version=1, loss_scale="1.0", extra=""):
    """state.json as src/checkpoint/checkpoint.cpp writes it."""
    return ("{\n"
            '  "format_version": %d,\n  "step": %d,\n  "tokens_total": %d,\n'
            '  "sampler_cursor": {"shard": 0, "pos": 24},\n'
            '  "loss_scale": %s,\n  "library_version": "0.1.0",\n'
            '  "config_toml": %s%s\n}\n'
            % (version, step, step * 8, loss_scale, json.dumps(TINY_TOML), extra)).encode()


def checkpoint_parts(V=8, maxT=4, L=1, NH=1, C=4, model_dtype="F32"):
    table = param_table(V, maxT, L, C)
    conv = f32 if model_dtype == "F32" else bf16
    model = safetensors([(n, model_dtype, s, conv(values(numel(s)))) for n, s in table],
                        {"format": "pt"})
    moments = [("m." + n, "F32", s, f32(values(numel(s), 1e-3))) for n, s in table]
    moments += [("v." + n, "F32", s, f32([abs(x) for x in values(numel(s), 1e-6)])) for n, s in table]
    return [model, hf_config(V, maxT, L, NH, C), safetensors(moments), state_json()]


SEP = b"@@TRTFILE@@"


def checkpoint_input(flags, parts):
    return bytes([flags]) + SEP.join(parts)


# ------------------------------------------------------------------------- llm.c
def llmc(version=3, maxT=4, V=5, L=1, NH=1, C=4, Vp=8, cut=0, header_patch=None):
    hdr = [0] * 256
    hdr[:8] = [20240326, version, maxT, V, L, NH, C, Vp]
    if header_patch:
        for k, v in header_patch.items():
            hdr[k] = v
    n = Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C
    vals = values(n)
    body = f32(vals) if version == 3 else bf16(vals)
    out = struct.pack("<256i", *hdr) + body
    return out[:len(out) - cut] if cut else out


# ------------------------------------------------------------------------- token shards
def shard(tokens, u32=False, patch=None):
    hdr = [0] * 256
    hdr[:3] = [20240801, 7, len(tokens)] if u32 else [20240520, 1, len(tokens)]
    if patch:
        for k, v in patch.items():
            hdr[k] = v
    return struct.pack("<256i", *hdr) + struct.pack("<%d%s" % (len(tokens), "I" if u32 else "H"), *tokens)


def trailer(vocab=256, B=2, flags=0, T=4, seed=1, step=1, pos=0, micro=0, cshard=0, copy_off=0):
    return struct.pack("<IbBHQiiHBBi", vocab, B, flags, T, seed, step, pos, micro, cshard, 0, copy_off)


def byte_chars():
    """GPT-2's byte alphabet: byte b -> the character standing for it (src/tokenizer/byte_level.h)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


CL100K = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def tokenizer_json(pre="gpt2", merges=None, model_type="BPE", normalizer=None, ignore_merges=False,
                   added=None):
    """A small byte-level BPE tokenizer.json (the layout of tests/tokenizer/synthetic_tokenizer.h)."""
    chars = byte_chars()
    vocab = {chars[b]: b for b in range(256)}
    vocab.update({"he": 256, "ll": 257, "hell": 258, "hello": 259, chars[32] + "h": 260, "hel": 262})
    if merges is None:
        merges = ["h e", "l l", "he ll", ["hell", "o"], chars[32] + " h"]
    if pre == "gpt2":
        pre_tok = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    else:
        pre_tok = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CL100K}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added if added is not None else [
            {"id": 261, "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}],
        "normalizer": normalizer, "pre_tokenizer": pre_tok, "post_processor": None,
        "decoder": {"type": "ByteLevel"},
        "model": {"type": model_type, "dropout": None, "unk_token": None, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }
    return json.dumps(doc, ensure_ascii=False).encode()


def sp_tokenizer_json(normalizer="llama2", pre=None, decoder="llama2", byte_fallback=True,
                      unk_token="<unk>"):
    """A small SentencePiece-style tokenizer.json (tests/tokenizer/synthetic_tokenizer.h's)."""
    meta = "\u2581"
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
    vocab.update({meta: 259, "h": 260, "e": 261, "l": 262, "o": 263, "he": 264, "ll": 265,
                  "hell": 266, "hello": 267, meta + "hello": 268})
    if normalizer == "llama2":
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": meta},
            {"type": "Replace", "pattern": {"String": " "}, "content": meta}]}
    if decoder == "llama2":
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": meta}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": None, "decoder": decoder,
        "model": {"type": "BPE", "dropout": None, "unk_token": unk_token, "fuse_unk": True,
                  "byte_fallback": byte_fallback, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "vocab": vocab,
                  "merges": ["h e", "l l", "he ll", "hell o", meta + " hello"]},
    }
    return json.dumps(doc, ensure_ascii=False).encode()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    corpus = {}

    # --- fuzz_config: TOML text, optional "#%set KEY=VALUE" tail
    with open(os.path.join(ROOT, "examples/configs/shakespeare.toml"), "rb") as f:
        shakespeare = f.read()
    full = b"""[model]
vocab_size = 50257
context_length = 1024
n_layer = 12
n_head = 12
d_model = 768
init_from = ""
seed = 1337
[data]
train = "data/train_*.bin"
val = "/abs/val.bin"
tokenizer = ""
sampler = "sequential"
seed = 9223372036854775807
placement = "auto"
[train]
batch_size = 8
seq_len = 1024
grad_accum = 4
steps = 100
eval_every = 0
eval_batches = 1
checkpoint_every = 50
keep_last = 0
out_dir = "out"
[optim]
lr = 6e-4
betas = [0.9, 0.95]
eps = 1e-8
weight_decay = 0.0
grad_clip = 1.0
schedule = "linear"
warmup_steps = 10
min_lr = 0.0
[runtime]
device = "cpu"
precision = "fp32"
threads = 2
log_every = 1
max_inflight = 2
peak_tflops = 0.5
peak_gbs = 2.5
[accel]
fused_adamw = true
cuda_graphs = false
attention = "matmul"
fused_classifier = true
matmul_epilogues = false
lowp_activations = false
deterministic = true
"""
    syntax = (b"# TOML forms the parser must take\n"
              b"model.n_layer = 0x2\nmodel.d_model = 1_024\nmodel.n_head = 0o10\n"
              b"data = { train = 'lit\\eral/*.bin', val = \"\\u00e9\\t\\\"q\\\"\" }\n"
              b"[optim]\nlr = +1.5e-3\nbetas = [ 0.9 , 0.999, ]\n"
              b"[train]\nout_dir = '''\nmulti\nline'''\n")
    corpus["fuzz_config"] = {
        "shakespeare.toml": shakespeare,
        "full.toml": full,
        "minimal.toml": b"[model]\nvocab_size = 256\n",
        "syntax.toml": syntax,
        "set_batch.toml": b"[train]\nbatch_size = 4\n#%set train.batch_size=64",
        "set_betas.toml": b"#%set optim.betas=[0.8, 0.99]",
        "set_path.toml": b"[data]\ntrain = \"a.bin\"\n#%set data.train=\"../d/train_*.bin\"",
        "set_enum.toml": b"#%set runtime.precision=\"bf16\"",
        "set_unknown.toml": b"#%set train.batchsize=4",
        "bad_unknown.toml": b"[train]\nbatchsize = 4\n",
        "bad_range.toml": b"[train]\nbatch_size = 4294967297\n",
        "bad_cross.toml": b"[model]\nn_head = 3\nd_model = 128\n[train]\nseq_len = 4096\n",
        "bad_type.toml": b"[optim]\nlr = \"fast\"\nbetas = [0.9]\n[accel]\ndeterministic = 1\n",
        "bad_syntax.toml": b"[model\nvocab_size = = 3\n",
    }

    # --- fuzz_safetensors
    st = {}
    st["f32_meta.safetensors"] = safetensors(
        [("a", "F32", [2, 3], f32(values(6))), ("b", "F32", [3], f32(values(3)))], {"format": "pt"})
    st["dtypes.safetensors"] = safetensors([
        ("bf16", "BF16", [4], bf16(values(4))),
        ("f16", "F16", [6], struct.pack("<6H", 0x0001, 0x03ff, 0x3c00, 0x7c00, 0xfe00, 0x8000)),
        ("f64", "F64", [2], struct.pack("<2d", 1e300, -2.5)),
        ("i64", "I64", [1], struct.pack("<q", -1)), ("i32", "I32", [2], struct.pack("<2i", 1, 2)),
        ("i16", "I16", [1], struct.pack("<h", 3)), ("i8", "I8", [1], b"\x04"),
        ("u8", "U8", [2], b"\x05\x06"), ("bool", "BOOL", [1], b"\x01")])
    st["scalar_empty.safetensors"] = safetensors([
        ("scalar", "F32", [], f32([1.0])), ("empty", "F32", [0, 7], b""), ("e2", "BF16", [3, 0], b""),
        ("t\u00e9\U0001F600", "F32", [1], f32([2.0]))])
    st["unpadded.safetensors"] = safetensors([("x", "F32", [1], f32([3.0]))], pad=False)
    base = safetensors([("a", "F32", [2], f32([1.0, 2.0])), ("b", "F32", [1], f32([3.0]))])
    st["near_trailing.safetensors"] = base + b"\0\0\0\0"
    st["near_truncated.safetensors"] = base[:-1]
    hdr = (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
           b'"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')
    st["near_overlap.safetensors"] = struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8
    hdr = (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
           b'"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"__metadata__":{"k":"v","k":"w"}}')
    st["near_duplicate.safetensors"] = struct.pack("<Q", len(hdr)) + hdr + b"\0" * 16
    hdr = b'{"big":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}'
    st["near_overflow.safetensors"] = struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8
    st["near_hugelen.safetensors"] = struct.pack("<Q", 2 ** 63) + b"{}"
    corpus["fuzz_safetensors"] = st

    # --- fuzz_llmc
    corpus["fuzz_llmc"] = {
        "v3_f32.bin": llmc(3),
        "v5_bf16.bin": llmc(5),
        "v3_l2_c2.bin": llmc(3, maxT=3, V=3, L=2, NH=2, C=2, Vp=4),
        "near_truncated.bin": llmc(3, cut=2),
        "near_version.bin": llmc(4),
        "near_vp_small.bin": llmc(3, header_patch={7: 4}),
        "near_negative_dim.bin": llmc(3, header_patch={4: -1})[:1024],
        "near_huge_dims.bin": llmc(5, header_patch={4: 2 ** 31 - 1, 6: 2 ** 31 - 1})[:1024],
    }

    # --- fuzz_token_shard: shards separated by TRTSHARD, then a 32-byte trailer
    u16 = [(i * 37) % 256 for i in range(64)]
    corpus["fuzz_token_shard"] = {
        "u16.bin": shard(u16) + trailer(),
        "u32.bin": shard([(i * 7919) % 70000 for i in range(40)], u32=True) +
                   trailer(vocab=70000, B=3, T=5, seed=7, step=2, pos=9),
        "glob_two.bin": shard(u16[:20]) + b"TRTSHARD" + shard(u16[:50]) +
                        trailer(B=2, flags=1, T=8, pos=30, cshard=1, copy_off=3),
        "glob_one.bin": shard(u16[:10]) + trailer(B=1, flags=1, T=9),
        "big_batch.bin": shard(u16) + trailer(B=16, T=3, step=100000, micro=3),
        "near_bad_id.bin": shard(u16) + trailer(vocab=200),
        "near_truncated.bin": shard(u16)[:-1] + trailer(),
        "near_version.bin": shard(u16, patch={1: 7}) + trailer(),
        "near_count.bin": shard(u16, patch={2: -1}) + trailer(),
        "near_empty.bin": shard([]) + trailer(),
        "near_bad_shape.bin": shard(u16) + trailer(B=-1, T=0, pos=-5, copy_off=-1),
    }

    # --- fuzz_checkpoint: flags byte, then the folder's files separated by @@TRTFILE@@
    parts = checkpoint_parts()
    manifest = b"".join(hashlib.sha256(p).hexdigest().encode() + b"  " + n + b"\n" for n, p in
                        zip([b"model.safetensors", b"config.json", b"optimizer.safetensors",
                             b"state.json"], parts))
    corpus["fuzz_checkpoint"] = {
        "read.bin": checkpoint_input(0, parts),
        "read_no_optim_l2.bin": checkpoint_input(2, checkpoint_parts(V=5, maxT=3, L=2, NH=2, C=2)),
        "export_f32.bin": checkpoint_input(4, parts),
        "export_bf16_latest.bin": checkpoint_input(4 | 8 | 16, parts + [b"ckpt\n"]),
        "raw_manifest.bin": checkpoint_input(1, parts + [manifest]),
        "near_raw_manifest.bin": checkpoint_input(1, parts + [manifest.replace(b"  ", b" *", 1)]),
        "near_newer.bin": checkpoint_input(0, parts[:3] + [state_json(version=2)]),
        "near_state.bin": checkpoint_input(0, parts[:3] + [state_json(loss_scale="-1", extra=', "step": 4')]),
        "near_n_head.bin": checkpoint_input(4, [parts[0], hf_config(8, 4, 1, 2, 4)] + parts[2:]),
        "near_bf16_model.bin": checkpoint_input(0, checkpoint_parts(model_dtype="BF16")),
        "near_missing.bin": checkpoint_input(16, parts[:2]),
    }

    # --- fuzz_peft_adapter: flags byte (bit 0 llama, bit 1 all-linear), then
    # adapter_config.json @@TRTFILE@@ adapter_model.safetensors, for the target's tiny models
    # (gpt2: V8 T4 L2 H2 C4; llama: the same with 1 kv head, d_ff 6) with r 2, alpha 4.
    def peft_config(r=2, alpha=4, extra=""):
        return ('{"peft_type": "LORA", "r": %d, "lora_alpha": %s, "lora_dropout": 0.0, '
                '"bias": "none"%s}' % (r, alpha, extra)).encode()

    def peft_weights(modules, dtype="F32", drop=0):
        """modules: [(path, in, out)]; A [2, in], B [out, 2] per module."""
        tensors = []
        for path, fan_in, fan_out in modules:
            for part, shape in (("lora_A", [2, fan_in]), ("lora_B", [fan_out, 2])):
                vals = values(numel(shape))
                raw = f32(vals) if dtype == "F32" else bf16(vals)
                tensors.append(("base_model.model.%s.%s.weight" % (path, part), dtype, shape, raw))
        return safetensors(tensors[drop:], metadata={"format": "pt"})

    gpt2_default = [("transformer.h.%d.attn.c_attn" % i, 4, 12) for i in range(2)]
    gpt2_all = [m for i in range(2) for m in (
        ("transformer.h.%d.attn.c_attn" % i, 4, 12), ("transformer.h.%d.attn.c_proj" % i, 4, 4),
        ("transformer.h.%d.mlp.c_fc" % i, 4, 16), ("transformer.h.%d.mlp.c_proj" % i, 16, 4))]
    llama_default = [m for i in range(2) for m in (
        ("model.layers.%d.self_attn.q_proj" % i, 4, 4), ("model.layers.%d.self_attn.v_proj" % i, 4, 2))]
    sep = b"@@TRTFILE@@"
    corpus["fuzz_peft_adapter"] = {
        "gpt2.bin": b"\x00" + peft_config() + sep + peft_weights(gpt2_default),
        "gpt2_all_linear_bf16.bin": b"\x02" + peft_config() + sep + peft_weights(gpt2_all, "BF16"),
        "llama.bin": b"\x01" + peft_config() + sep + peft_weights(llama_default),
        "near_rank.bin": b"\x00" + peft_config(r=4) + sep + peft_weights(gpt2_default),
        "near_dora.bin": b"\x00" + peft_config(extra=', "use_dora": true') + sep +
                         peft_weights(gpt2_default),
        "near_missing_tensor.bin": b"\x01" + peft_config() + sep + peft_weights(llama_default, drop=1),
        "near_other_family.bin": b"\x01" + peft_config() + sep + peft_weights(gpt2_default),
        "near_no_weights.bin": b"\x00" + peft_config(),
    }

    # --- fuzz_hf_model: flags byte (bit 0: the run says arch "llama"; bit 1: n_layer = 1),
    # then config.json @@TRTFILE@@ index @@TRTFILE@@ shard @@TRTFILE@@ shard; no index: the
    # first shard is model.safetensors.
    def hf_weights(names_shapes, skip=()):
        return safetensors([(n, "F32", sh, f32(values(numel(sh)))) for n, sh in names_shapes
                            if n not in skip], {"format": "pt"})

    def hf_index(weight_map):
        return json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}).encode()

    gpt2 = param_table(8, 4, 1, 4)
    first, second = gpt2[:6], gpt2[6:]
    shard_names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = hf_index({n: shard_names[0] for n, _ in first} | {n: shard_names[1] for n, _ in second})
    cfg = hf_config(8, 4, 1, 1, 4)
    llama_cfg = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                            "vocab_size": 8, "max_position_embeddings": 4, "hidden_size": 4,
                            "intermediate_size": 6, "num_hidden_layers": 1,
                            "num_attention_heads": 2, "num_key_value_heads": 1,
                            "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                            "tie_word_embeddings": False}).encode()
    llama = [("model.embed_tokens.weight", [8, 4]),
             ("model.layers.0.input_layernorm.weight", [4]),
             ("model.layers.0.self_attn.q_proj.weight", [4, 4]),
             ("model.layers.0.self_attn.k_proj.weight", [2, 4]),
             ("model.layers.0.self_attn.v_proj.weight", [2, 4]),
             ("model.layers.0.self_attn.o_proj.weight", [4, 4]),
             ("model.layers.0.post_attention_layernorm.weight", [4]),
             ("model.layers.0.mlp.gate_proj.weight", [6, 4]),
             ("model.layers.0.mlp.up_proj.weight", [6, 4]),
             ("model.layers.0.mlp.down_proj.weight", [4, 6]),
             ("model.norm.weight", [4]), ("lm_head.weight", [8, 4])]
    nan = safetensors([(n, "F32", sh, f32([float("nan")] * numel(sh))) for n, sh in gpt2])
    corpus["fuzz_hf_model"] = {
        "gpt2_single.bin": b"\x00" + SEP.join([cfg, b"", hf_weights(gpt2)]),
        "gpt2_sharded.bin": b"\x02" + SEP.join([cfg, index, hf_weights(first), hf_weights(second)]),
        "llama_single.bin": b"\x01" + SEP.join([llama_cfg, b"", hf_weights(llama)]),
        "llama_sharded.bin": b"\x01" + SEP.join([llama_cfg, hf_index(
            {n: shard_names[i // 6] for i, (n, _) in enumerate(llama)}),
            hf_weights(llama[:6]), hf_weights(llama[6:])]),
        "near_contradiction.bin": b"\x01" + SEP.join([cfg, b"", hf_weights(gpt2)]),
        "near_missing_shard.bin": b"\x00" + SEP.join([cfg, index, hf_weights(first)]),
        "near_shard_path.bin": b"\x00" + SEP.join([cfg, hf_index({"wte.weight": "../x"}),
                                                    hf_weights(first), hf_weights(second)]),
        "near_twice.bin": b"\x00" + SEP.join([cfg, index, hf_weights(gpt2), hf_weights(second)]),
        "near_missing_tensor.bin": b"\x00" + SEP.join([cfg, b"", hf_weights(gpt2, {"ln_f.bias"})]),
        "near_nan.bin": b"\x00" + SEP.join([cfg, b"", nan]),
        "near_no_weights.bin": b"\x00" + cfg,
    }

    # --- fuzz_tokenizer: a mode byte (< 128: tokenizer.json; >= 128: text to encode)
    text = ("Hello world, it's 12345 <|end|> don't I'M \u65e5\u672c\u8a9e "
            "\U0001F600\u200d\U0001F680  \n\t x\u00a0y \r\n  end  ").encode()
    corpus["fuzz_tokenizer"] = {
        "gpt2.json": b"\x00" + tokenizer_json(),
        "cl100k.json": b"\x00" + tokenizer_json(pre="cl100k", ignore_merges=True),
        "near_merge_missing.json": b"\x00" + tokenizer_json(merges=["h e", "x q"]),
        "near_wordpiece.json": b"\x00" + tokenizer_json(model_type="WordPiece"),
        "near_nfc.json": b"\x00" + tokenizer_json(normalizer={"type": "NFC"}),
        "near_added_renames.json": b"\x00" + tokenizer_json(added=[
            {"id": 259, "content": "<|end|>", "special": True}]),
        "sp_llama2.json": b"\x00" + sp_tokenizer_json(),
        "sp_gemma3.json": b"\x00" + sp_tokenizer_json(
            normalizer={"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            pre={"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                 "invert": False},
            decoder={"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}]}),
        "sp_metaspace.json": b"\x00" + sp_tokenizer_json(
            normalizer=None,
            pre={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
            decoder={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}),
        "sp_split_behaviours.json": b"\x00" + sp_tokenizer_json(
            pre={"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"String": "l"}, "behavior": "Contiguous", "invert": True},
                {"type": "Split", "pattern": {"String": "e"}, "behavior": "MergedWithNext", "invert": False},
                {"type": "Split", "pattern": {"String": "o"}, "behavior": "Removed", "invert": False}]}),
        "near_sp_no_unk.json": b"\x00" + sp_tokenizer_json(byte_fallback=False, unk_token=None),
        "near_sp_regex_replace.json": b"\x00" + sp_tokenizer_json(
            normalizer={"type": "Replace", "pattern": {"Regex": " +"}, "content": "\u2581"}),
        "text.txt": b"\x80" + text,
        "text_invalid_utf8.txt": b"\x80" + text[:20] + b"\xff\xc3" + text[20:],
    }

    # --- fuzz_regex: a pattern, NUL, a text (the patterns of real tokenizer.json files)
    o200k = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
             r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
             r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
    deepseek = ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
                "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")
    gpt2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
    corpus["fuzz_regex"] = {
        "o200k.txt": o200k.encode() + b"\0" + text,
        "cl100k.txt": CL100K.encode() + b"\0" + text,
        "gpt2.txt": gpt2.encode(),
        "deepseek.txt": deepseek.encode() + b"\0" + text,
        "cjk.txt": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+".encode() + b"\0" + text,
        "lazy_possessive.txt": rb"(?>a+)b|x{2,3}?y|a*+c|(?i)[a-f\x41]+" + b"\0aaab xxxy AbC",
        "hostile.txt": rb"(a+)+b" + b"\0" + b"a" * 40,
        "near_lookbehind.txt": rb"(?<=a)b",
        "near_unclosed.txt": rb"[\p{L}",
    }

    # --- fuzz_report_metrics: a run's metrics.jsonl (docs/FORMATS.md section 5)
    def run_line(step, run=None, resumed_from=None):
        d = {"step": step, "split": "run"}
        if run is not None:  # the writers since run ids: every header names its run
            d.update({"run": run, "resumed_from": resumed_from})
        d.update({"time": "2025-01-31T12:34:56Z", "version": "0.1.0",
                  "acceleration": "device=cpu (auto) precision=fp32",
                  "model": "gpt2 L2 H2 C16 V48, 9344 parameters, init random (seed 1)"})
        return json.dumps(d)

    def train_line(step, loss, **extra):
        d = {"step": step, "split": "train", "loss": loss, "lr": 3e-4 * min(1, step / 3),
             "grad_norm": 0.5 + step / 10, "tokens_total": 64 * step, "ms": 12.5,
             "tok_per_s": 5120.0, "mfu": 0.01}
        d.update(extra)
        return json.dumps(d)

    def val_line(step, loss):
        return json.dumps({"step": step, "split": "val", "loss": loss})

    def lines(*ls):
        return ("\n".join(ls) + "\n").encode()

    corpus["fuzz_report_metrics"] = {
        "run.jsonl": lines(run_line(0), *[train_line(s, 4 - s / 10) for s in range(1, 9)],
                           val_line(4, 3.7), val_line(8, 3.3)),
        "resumed.jsonl": lines(run_line(0), *[train_line(s, 4 - s / 10) for s in range(1, 7)],
                               run_line(3), *[train_line(s, 3.9 - s / 10) for s in range(4, 9)],
                               val_line(6, 3.5), val_line(6, 3.4)),
        # Runs of one folder: a fresh start beside a run with ids, a resume of the first.
        "runs.jsonl": lines(run_line(0, "20250131T123456Z-0000000a"),
                            *[train_line(s, 4 - s / 10) for s in range(1, 6)],
                            run_line(0, "20250131T130000Z-0000000b"),
                            *[train_line(s, 4.1 - s / 10) for s in range(1, 4)],
                            run_line(3, "20250131T123456Z-0000000a", 3),
                            *[train_line(s, 3.8 - s / 10) for s in range(4, 8)]),
        # An older writer's fresh start over earlier steps, then its resume under a new id.
        "runs_upgrade.jsonl": lines(run_line(0), *[train_line(s, 4.0) for s in (1, 2, 3)],
                                    run_line(0), *[train_line(s, 3.9) for s in (1, 2)],
                                    run_line(2, "20250131T140000Z-0000000c", 2),
                                    *[train_line(s, 3.8) for s in (3, 4)]),
        "no_headers.jsonl": lines(*[train_line(s, 4.0) for s in (1, 2, 3, 2, 3, 4)]),
        "gaps.jsonl": b'{"step": 1, "split": "train", "loss": NaN}\n'
                      b'{"step": 2, "split": "train", "loss": null, "lr": Infinity}\r\n'
                      b'{"step": 3, "split": "train", "loss": -Infinity, "ms": 1e308}\n\n'
                      b'{"step": 3, "split": "val", "loss": 1e-320}\n',
        "near_malformed.jsonl": b'garbage\n{"split": "train"}\n{"step": -1, "split": "train"}\n'
                                b'{"step": 1.5, "split": "val"}\n{"step": 1, "split": "other"}\n'
                                b'{"step": 9007199254740993, "split": "train"}\n[1, 2]\n'
                                b'{"step": 1, "split": "train", "loss": 1, "x": {"y": [1, "}"]}}\n',
        "escapes.jsonl": lines(json.dumps({"step": 0, "split": "run", "version": "\u00e9\u65e5 \\ \"",
                                           "model": "\U0001F600 \t tab"}),
                               train_line(1, 1.0)),
    }

    # --- fuzz_gguf: model files of each architecture and tensor type, and near-valid ones
    corpus["fuzz_gguf"] = {
        "llama_f32.gguf": gguf_model("llama", V=8, C=4, F=8, NH=2, NKV=1, tied=False),
        "gpt2_f32.gguf": gguf_model("gpt2", V=8, C=4, F=16, NH=2, NKV=2),
        "qwen2_f32.gguf": gguf_model("qwen2", V=8, C=4, F=8, NH=2, NKV=2, qk_bias=True),
        "llama_q8_0.gguf": gguf_model("llama", V=4, C=32, F=32, NH=2, NKV=1, encode=(8, q8_0)),
        "llama_q4_0.gguf": gguf_model("llama", V=4, C=32, F=32, NH=4, NKV=2, encode=(2, q4_0)),
        "near_missing_tensor.gguf": gguf_model("llama", V=8, C=4, F=8, NH=2, NKV=1,
                                               drop="blk.0.attn_k.weight"),
        "near_bad_arch.gguf": gguf_model("llama", V=8, C=4, F=8, NH=2, NKV=1,
                                         patch_kv={"general.architecture": gguf_str("bert")}),
        "near_heads.gguf": gguf_model("llama", V=8, C=4, F=8, NH=2, NKV=1,
                                      patch_kv={"llama.attention.head_count": gguf_u32(3)}),
        "near_version1.gguf": gguf([], [], version=1),
        "near_align.gguf": gguf([("general.alignment", *gguf_u32(48))], []),
    }

    total = 0
    for target, files in corpus.items():
        d = os.path.join(out, target)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            total += len(data)
    print("wrote %d files, %d bytes, under %s" % (sum(len(f) for f in corpus.values()), total, out))


if __name__ == "__main__":
    main()

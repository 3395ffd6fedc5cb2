#!/usr/bin/env bash
# `trainrt bench` on the CPU backend: a tiny model for a few steps; the JSON report's fields
# exist and are sane (tokens/s > 0, p95 >= p50, one finite loss per timed step, FLOPs per
# token = 6N + 6LCT, MFU from runtime.peak_tflops), the same seed gives the same losses, the
# bench writes nothing but its report, --profile's tables and JSON (op times inside the step,
# layers, FLOPs), and bad usage fails. No timed assertions.
#   usage: cli_bench.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR PYTHON
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
PY=$4

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

# expect_status NAME STATUS PATTERN COMMAND...: exits with STATUS, PATTERN on stderr.
expect_status() {
    local name=$1 want=$2 pattern=$3
    shift 3
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -eq "$want" ] || { cat "$name.err" >&2; fail "$name: exit status $rc, expected $want"; }
    grep -q -- "$pattern" "$name.err" || { cat "$name.err" >&2; fail "$name: stderr lacks '$pattern'"; }
    echo "ok: $name (exit $rc)"
}

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

"$TRAINRT" prepare --text "$SRC/examples/data/tinyshakespeare.txt" --out data >/dev/null
# out_dir and checkpoint_every are set on purpose: the bench must override both.
cat >tiny.toml <<'EOF'
[model]
vocab_size = 256
context_length = 32
n_layer = 2
n_head = 2
d_model = 32
[data]
train = "data/train.bin"
val = "data/val.bin"
[train]
batch_size = 2
seq_len = 32
grad_accum = 2
steps = 50
eval_every = 2
checkpoint_every = 2
out_dir = "out"
[runtime]
device = "cpu"
threads = 1
EOF

# ------------------------------------------------------------------ a run, its JSON
step "trainrt bench (4 timed steps after 2 warm-up)"
"$TRAINRT" bench tiny.toml --steps 4 --warmup 2 --json a.json >a.out 2>a.err ||
    { cat a.err >&2; fail "bench exited $?"; }
cat a.out
grep -q '^| throughput | ' a.out || fail "no throughput row in the table"
grep -q '^| MFU | n/a' a.out || fail "the CPU has no peak: MFU must read n/a"
[ ! -e out ] || fail "the bench wrote into train.out_dir"

"$PY" - a.json <<'PY' || fail "a.json is not a sane bench report"
import json, math, sys
r = json.load(open(sys.argv[1]))
def check(cond, what):
    if not cond:
        sys.exit("bad report: %s\n%s" % (what, json.dumps(r, indent=1)[:3000]))
for k in ["schema", "device", "precision", "parameters", "tokens_per_step", "warmup_steps",
          "timed_steps", "wall_s", "tokens_per_s", "steps_per_s", "step_ms_mean", "step_ms_p50",
          "step_ms_p95", "model_flops_per_token", "peak_flops", "mfu", "first_loss",
          "last_loss", "losses", "step_ms", "bytes_in_use"]:
    check(k in r, "missing field " + k)
check(r["schema"] == "trainrt-bench/1", "schema")
check(r["device"] == "cpu" and r["precision"] == "fp32", "device/precision as resolved")
check(r["warmup_steps"] == 2 and r["timed_steps"] == 4, "step counts")
check(r["tokens_per_step"] == 2 * 2 * 32, "tokens per step = grad_accum x B x T")
check(r["tokens_per_s"] > 0 and r["steps_per_s"] > 0 and r["wall_s"] > 0, "throughput > 0")
check(abs(r["tokens_per_s"] - r["steps_per_s"] * r["tokens_per_step"]) <= 1e-9 * r["tokens_per_s"],
      "tokens/s = steps/s x tokens per step")
check(0 < r["step_ms_p50"] <= r["step_ms_p95"], "0 < p50 <= p95")
check(len(r["losses"]) == 4 and len(r["step_ms"]) == 4, "one loss and time per timed step")
check(all(isinstance(x, float) and math.isfinite(x) and 0 < x < 10 for x in r["losses"]),
      "finite losses near ln 256")
check(r["first_step"] == 3, "the timed steps follow the warm-up")
check(r["first_loss"] == r["losses"][0] and r["last_loss"] == r["losses"][-1], "first/last loss")
# V*C + T_max*C + L*(12 C^2 + 13 C) + 2C, then 6N + 6*L*C*T.
C, L, T = 32, 2, 32
n = 256 * C + 32 * C + L * (12 * C * C + 13 * C) + 2 * C
check(r["parameters"] == n, "parameter count")
check(r["model_flops_per_token"] == 6 * n + 6 * L * C * T, "FLOPs per token = 6N + 6LCT")
check(r["peak_flops"] == 0 and r["mfu"] == 0, "no peak and no MFU on the CPU")
print("ok: a.json", {k: r[k] for k in ("tokens_per_s", "step_ms_p50", "step_ms_p95", "last_loss")})
PY

# ------------------------------------------------------------------ same seed, same losses
step "a second run: the same losses, bit for bit; an explicit peak gives an MFU"
"$TRAINRT" bench tiny.toml --steps 4 --warmup 2 --set runtime.peak_tflops=1e-6 \
    --json b.json >b.out 2>b.err || { cat b.err >&2; fail "second bench exited $?"; }
grep -q '^| MFU | [0-9.]* % of 1e-06 TFLOP/s' b.out || { cat b.out; fail "no MFU row with the peak"; }
"$PY" - a.json b.json <<'PY' || fail "b.json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
if a["losses"] != b["losses"]:
    sys.exit("losses differ between identical runs: %s vs %s" % (a["losses"], b["losses"]))
if b["peak_flops"] != 1e6:
    sys.exit("runtime.peak_tflops = 1e-6 should give peak_flops 1e6, got %r" % b["peak_flops"])
want = b["tokens_per_s"] * b["model_flops_per_token"] / 1e6
if not (b["mfu"] > 0 and abs(b["mfu"] - want) <= 1e-9 * want):
    sys.exit("mfu %r, expected tokens/s x FLOPs/token / peak = %r" % (b["mfu"], want))
print("ok: identical losses; mfu", b["mfu"])
PY

# --warmup 0 works: the first timed step is step 1.
"$TRAINRT" bench tiny.toml --steps 1 --warmup 0 --json c.json >/dev/null 2>c.err ||
    { cat c.err >&2; fail "bench --warmup 0 exited $?"; }
"$PY" -c 'import json,sys; r=json.load(open("c.json")); sys.exit(0 if r["first_step"] == 1 and len(r["losses"]) == 1 else "c.json: %r" % r)' ||
    fail "--warmup 0"
echo "ok: --warmup 0"

# ------------------------------------------------------------------ --profile
step "bench --profile at 2 threads: a 1-thread run beside it, both profiles in the JSON"
"$TRAINRT" bench tiny.toml --profile --steps 2 --warmup 1 --set runtime.threads=2 \
    --json p.json >p.out 2>p.err || { cat p.err >&2; fail "bench --profile exited $?"; }
grep -q '^| op | calls/step | ms @1 | ms @2 |' p.out || { cat p.out; fail "no scaling table"; }
grep -q '^| \*\*step\*\* |' p.out || { cat p.out; fail "no step row"; }
grep -q '^| block 1 |' p.out || { cat p.out; fail "no per-layer table"; }
[ ! -e out ] || fail "bench --profile wrote into train.out_dir"
"$PY" - p.json <<'PY' || fail "p.json is not a sane profile"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "trainrt-bench-profile/1", r["schema"]
runs = r["runs"]
assert [x["threads"] for x in runs] == [1, 2], [x["threads"] for x in runs]
for x in runs:
    assert x["schema"] == "trainrt-op-profile/1" and x["steps"] == 2, x
    assert 0 < x["op_s"] <= x["wall_s"], (x["op_s"], x["wall_s"])
    ops = x["ops"]
    assert abs(sum(o["seconds"] for o in ops) - x["op_s"]) <= 1e-9 * len(ops), "op times"
    assert {o["layer"] for o in ops} == {-1, 0, 1}, {o["layer"] for o in ops}
    # grad_accum 2: two forward products per layer and step
    qkv = [o for o in ops if o["label"] == "matmul fwd 32x96" and o["layer"] == 0]
    assert len(qkv) == 1 and qkv[0]["calls"] == 4, qkv
    assert qkv[0]["flops"] == 4 * 2.0 * 64 * 32 * 96, qkv[0]["flops"]
    assert all(o["bytes"] > 0 for o in ops if o["op"] not in ("begin_step", "end_step")), ops
print("ok: p.json", [(x["threads"], round(x["wall_s"], 4)) for x in runs])
PY
# --rounds 2: two sessions per thread count, alternating; the table shows medians.
"$TRAINRT" bench tiny.toml --profile --rounds 2 --steps 1 --warmup 0 --set runtime.threads=2 \
    --json r.json >r.out 2>r.err || { cat r.err >&2; fail "bench --profile --rounds 2 exited $?"; }
grep -q 'each figure is the median' r.out || { cat r.out; fail "--rounds: no word on medians"; }
grep -q '^| \*\*step\*\* |' r.out || { cat r.out; fail "--rounds: no step row"; }
"$PY" -c 'import json,sys; r=json.load(open("r.json")); t=[x["threads"] for x in r["runs"]]; sys.exit(0 if t == [1, 1, 2, 2] else "runs %r" % t)' ||
    fail "--rounds 2: the JSON does not hold the four sessions"
# One thread: one run, no scaling columns.
"$TRAINRT" bench tiny.toml --profile --steps 1 --warmup 0 >q.out 2>q.err ||
    { cat q.err >&2; fail "bench --profile at 1 thread exited $?"; }
grep -q '^| op | calls/step | ms/step | % of step | GFLOP/s | GB/s |' q.out ||
    { cat q.out; fail "no single-run table"; }
# With peaks (runtime.peak_tflops / peak_gbs; the GPUs' come from the table): the roofline
# columns, each op's floor = max(FLOPs / peak, bytes / peak) per step, as the JSON's figures give.
"$TRAINRT" bench tiny.toml --profile --steps 2 --warmup 0 --set runtime.peak_tflops=0.001 \
    --set runtime.peak_gbs=2 --json f.json >f.out 2>f.err ||
    { cat f.err >&2; fail "bench --profile with peaks exited $?"; }
grep -q '| % peak FLOP/s | % peak GB/s | floor ms | x floor | ms over floor |$' f.out ||
    { cat f.out; fail "no roofline columns"; }
grep -q '^floor = max(FLOPs / peak FLOP/s, bytes / peak GB/s)' f.out ||
    { cat f.out; fail "no word on the floor"; }
"$PY" - f.json f.out <<'PY' || fail "the floors do not follow the JSON"
import json, sys
x = json.load(open(sys.argv[1]))["runs"][0]
assert x["timing"] == "host" and x["peak_flops"] == 1e9 and x["peak_bytes_per_s"] == 2e9, x
rows = {}
for line in open(sys.argv[2]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 11 and cells[0] and cells[0] != "op" and not cells[0].startswith("-"):
        rows[cells[0]] = cells
ops = {}
for o in x["ops"]:
    ops.setdefault(o["label"], [0.0, 0.0])
    ops[o["label"]][0] += o["flops"]
    ops[o["label"]][1] += o["bytes"]
checked = 0
for label, (flops, nbytes) in ops.items():
    want_ms = 1e3 * max(flops / 1e9, nbytes / 2e9) / x["steps"]
    got = float(rows[label][8])
    assert abs(got - want_ms) <= 5e-4 + 1e-3 * want_ms, (label, got, want_ms)
    checked += 1
assert checked >= 10, checked
print("ok: floors of", checked, "ops")
PY
# bench/roofline.py reads the same JSON: its floors are the CLI's (two readers, one rule); its
# device table is perf.cpp's; a profile without peaks, or a file that is not one, exits 2.
"$PY" "$SRC/bench/roofline.py" f.json --top 100 --json roof.json >roof.out ||
    { cat roof.out; fail "roofline.py exited $?"; }
"$PY" - roof.json f.out "$SRC/src/runtime/perf.cpp" <<'PY' || fail "roofline.py disagrees"
import json, re, sys
sys.path.insert(0, sys.argv[3].rsplit("/src/", 1)[0] + "/bench")
import roofline
r = json.load(open(sys.argv[1]))
cli = {}
for line in open(sys.argv[2]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 11 and cells[0] and cells[0] != "op" and cells[0][0] not in "-(*":
        cli[cells[0]] = float(cells[8])
steps = 2
for row in r["rows"]:
    want = cli[row["label"]]
    got = 1e3 * row["floor_s"] / steps
    assert abs(got - want) <= 5e-4 + 1e-3 * want, (row["label"], got, want)
assert len(r["rows"]) == len(cli), (len(r["rows"]), len(cli))
src = open(sys.argv[3]).read()
flops = [(a, b, float(x), float(y), float(z)) for a, b, x, y, z in re.findall(
    r'\{"([a-z0-9 ]+)", "([a-z0-9 ]*)", ([0-9.]+), ([0-9.]+), ([0-9.]+)\}', src)]
gbs = [(a, b, c, float(v)) for a, b, c, v in re.findall(
    r'\{"([a-z0-9 ]+)", "([a-z0-9 ]*)", "([a-z0-9 ]*)", ([0-9.]+)\}', src)]
assert flops == roofline.PEAK_TFLOPS, (flops, roofline.PEAK_TFLOPS)
assert gbs == roofline.PEAK_GBS, (gbs, roofline.PEAK_GBS)
fl, by = roofline.device_peaks("NVIDIA H100 80GB HBM3", "bf16")
assert (fl, by) == (989.4e12, 3350e9), (fl, by)
print("ok: roofline.py's floors are the CLI's over", len(cli), "ops; its tables are perf.cpp's")
PY
"$PY" "$SRC/bench/roofline.py" f.json --device "NVIDIA H200" --precision bf16 >h200.out ||
    fail "roofline.py --device exited $?"
grep -q "against peaks 989.4 TFLOP/s and 4800 GB/s (the table's 'NVIDIA H200', bf16)" h200.out ||
    { cat h200.out; fail "roofline.py --device: wrong peaks"; }
rc=0; "$PY" "$SRC/bench/roofline.py" p.json >nopeak.out 2>nopeak.err || rc=$?
[ "$rc" = 2 ] && grep -q "no peaks" nopeak.err || fail "roofline.py without peaks: exit $rc"
rc=0; "$PY" "$SRC/bench/roofline.py" tiny.toml >bad.out 2>bad.err || rc=$?
[ "$rc" = 2 ] && grep -q "cannot read tiny.toml" bad.err || fail "roofline.py on a toml: exit $rc"
echo "ok: roofline.py"

# The libraries' choices: in bf16 with oneDNN's matmuls (where the CPU and build have them,
# as the log line says) every block shape made, with its implementation; else none.
"$TRAINRT" bench tiny.toml --profile --steps 1 --warmup 0 --set runtime.precision=bf16 \
    --json b.json >b.out 2>b.err || { cat b.err >&2; fail "bench --profile bf16 exited $?"; }
if grep -q 'cpu_matmul=onednn' b.err; then onednn=1; else onednn=0; fi
"$PY" - b.json "$onednn" <<'PY' || fail "the choices do not match the matmul library"
import json, sys
x = json.load(open(sys.argv[1]))["runs"][0]
onednn = sys.argv[2] == "1"
c = x["choices"]
if onednn:
    assert c, "oneDNN ran the matmuls but no choice is listed"
    for e in c:
        assert e["op"] == "oneDNN matmul block" and e["shape"].startswith("bf16 "), e
        assert e["choice"] and e["workspace_bytes"] >= 0, e
    # a linear layer's forward (its bias added by oneDNN), a weight gradient (summed into fp32)
    assert any(" +bias (ld " in e["shape"] for e in c), [e["shape"] for e in c]
    assert any(" += fp32 (ld " in e["shape"] for e in c), [e["shape"] for e in c]
else:
    assert c == [], c
print("ok: choices", len(c), "(oneDNN)" if onednn else "(OpenBLAS)")
PY
if [ "$onednn" = 1 ]; then
    grep -q '^| library choice | shape | chosen | workspace bytes |' b.out ||
        { cat b.out; fail "no choices table"; }
fi

# ------------------------------------------------------------------ errors
step "bad usage and failures"
expect_status no-config 2 "missing CONFIG" "$TRAINRT" bench
expect_status bad-warmup 2 "--warmup needs a non-negative integer" "$TRAINRT" bench tiny.toml --warmup -1
expect_status bad-steps 2 "--steps needs a positive integer" "$TRAINRT" bench tiny.toml --steps 0
expect_status no-json-file 2 "--json needs a file name" "$TRAINRT" bench tiny.toml --json
expect_status rounds-alone 2 "--rounds is for --profile" "$TRAINRT" bench tiny.toml --rounds 2
expect_status bad-rounds 2 "--rounds needs an integer" "$TRAINRT" bench tiny.toml --profile --rounds 0
expect_status bad-key 1 "no.such_key" "$TRAINRT" bench tiny.toml --set no.such_key=1
expect_status unwritable-json 1 "cannot write" "$TRAINRT" bench tiny.toml --steps 1 --warmup 0 \
    --json no_such_dir/x.json
"$TRAINRT" bench --help | grep -q '^usage: trainrt bench CONFIG' || fail "bench --help"
"$TRAINRT" --help | grep -q '^  bench CONFIG' || fail "bench missing from trainrt --help"
echo "PASS"

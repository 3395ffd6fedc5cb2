#!/usr/bin/env bash
# `trainrt report` end to end: a tiny run trained, resumed from an earlier checkpoint (so
# metrics.jsonl repeats steps), reported; the HTML page checked (one <svg> per chart, the
# points per series after de-duplication, the run config and acceleration line, nothing
# external); the terminal summary; two runs overlaid; NaN gaps, a one-step run, a huge run
# (reduced, spikes kept), an older log without run headers; several runs in one folder (a
# fresh start beside earlier runs, a resume of one of them); and the error paths.
#   usage: report_test.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
TEXT="$SRC/examples/data/tinyshakespeare.txt"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

# Runs a command that must fail with exit status CODE and a message on stderr matching PATTERN.
#   expect_failure NAME CODE PATTERN COMMAND...
expect_failure() {
    local name=$1 code=$2 pattern=$3
    shift 3
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -eq "$code" ] || { cat "$name.err" >&2; fail "$name: exit status $rc, expected $code: $*"; }
    grep -q -- "$pattern" "$name.err" || {
        cat "$name.err" >&2
        fail "$name: stderr does not mention '$pattern'"
    }
    echo "ok: $name (exit $rc): $(head -n 1 "$name.err")"
}

# count FILE REGEX: the number of matches of REGEX in FILE (not lines).
count() { grep -oE -- "$2" "$1" | wc -l; }

# The data-n (finite points, after de-duplication) of the path of series SERIES of run RUN
# in chart CHART of PAGE.
#   points PAGE CHART RUN SERIES
points() {
    sed -n "/<svg class=\"chart\" id=\"$2\"/,/<\/svg>/p" "$1" |
        grep -oE "data-series=\"$4\" data-run=\"$3\" data-n=\"[0-9]+\"" |
        sed -E 's/.*data-n="([0-9]+)"/\1/'
}
expect_points() {  # PAGE CHART RUN SERIES N
    local n
    n=$(points "$1" "$2" "$3" "$4")
    [ "$n" = "$5" ] || fail "$1: chart $2, run '$3', series '$4': '$n' points, expected $5"
}

# The HTML is well-formed enough: one <svg> per chart, the charts' ids, tags closed, nothing
# that would reach the network.
check_page() {
    local page=$1
    [ -s "$page" ] || fail "$page: missing or empty"
    [ "$(count "$page" '<svg ')" -eq 6 ] || fail "$page: $(count "$page" '<svg ') <svg>, expected 6"
    [ "$(count "$page" '</svg>')" -eq 6 ] || fail "$page: <svg> not closed"
    for id in loss-step loss-tokens lr grad-norm tok-per-s mfu; do
        grep -q "<svg class=\"chart\" id=\"$id\"" "$page" || fail "$page: no chart '$id'"
    done
    [ "$(count "$page" '<html')" -eq 1 ] && [ "$(count "$page" '</html>')" -eq 1 ] ||
        fail "$page: not one <html> ... </html>"
    for tag in head body style script table pre section figure; do
        [ "$(count "$page" "<$tag[ >]")" -eq "$(count "$page" "</$tag>")" ] ||
            fail "$page: <$tag> opened $(count "$page" "<$tag[ >]") times, closed $(count "$page" "</$tag>")"
    done
    if grep -qiE 'https?:|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(|<link|<img|<iframe| src=' "$page"; then
        grep -noiE 'https?:[^" ]*|@import|url\(|<link[^>]*>|<img|<iframe| src=[^ ]*' "$page" | head >&2
        fail "$page: references something outside the page"
    fi
    echo "ok: $page is one page of 6 inline SVG charts, $(stat -c %s "$page") bytes, nothing external"
}

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
[ -f "$TEXT" ] || fail "no text at $TEXT"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# ------------------------------------------------------------------ a run, resumed
step "a tiny run: 6 steps, then resumed from its step-3 checkpoint for 5 more"
"$TRAINRT" prepare --text "$TEXT" --out data --val-fraction 0.1 >prepare.out
cat >run.toml <<'TOML'
[model]
vocab_size = 256
context_length = 32
n_layer = 1
n_head = 2
d_model = 32

[data]
train = "data/train.bin"
val = "data/val.bin"

[train]
batch_size = 2
seq_len = 16
steps = 20
eval_every = 3
eval_batches = 2
checkpoint_every = 3
out_dir = "out"

[optim]
lr = 0.001

[runtime]
threads = 1
log_every = 1
TOML
"$TRAINRT" train run.toml --steps 6 >train1.out 2>train1.err || { cat train1.err >&2; fail "train: exit"; }
[ -d out/step_00000003 ] || fail "train: no step-3 checkpoint"
"$TRAINRT" train run.toml --checkpoint out/step_00000003 --steps 5 >train2.out 2>train2.err ||
    { cat train2.err >&2; fail "train --checkpoint: exit"; }
# The file as written: steps 1-6, then 4-8 again; evals at 3, 6, then 6 and 8 (the end).
n_train=$(grep -c '"split": "train"' out/metrics.jsonl)
n_val=$(grep -c '"split": "val"' out/metrics.jsonl)
[ "$n_train" -eq 11 ] && [ "$n_val" -eq 4 ] ||
    fail "metrics.jsonl: $n_train train and $n_val val lines, expected 11 and 4"

step "the run header line (docs/FORMATS.md §5): one per session, at the step it started from"
[ "$(grep -c '"split": "run"' out/metrics.jsonl)" -eq 2 ] || fail "metrics.jsonl: not 2 run lines"
head -n 1 out/metrics.jsonl | grep -Eq '^\{"step": 0, "split": "run", "run": "[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", "resumed_from": null, "time": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", "version": "[0-9]+\.[0-9]+\.[0-9]+", "acceleration": "device=cpu .*precision=fp32.*", "model": "gpt2 .*parameters.*"\}$' ||
    fail "metrics.jsonl: the first line is not a run header: $(head -n 1 out/metrics.jsonl)"
# The resumed session continues the run its checkpoint belongs to (state.json's "run").
run1=$(head -n 1 out/metrics.jsonl | sed -E 's/.*"run": "([^"]*)".*/\1/')
grep -q "^  \"run\": \"$run1\",\$" out/step_00000003/state.json ||
    fail "the step-3 checkpoint does not name run $run1"
grep '"split": "run"' out/metrics.jsonl | sed -n 2p | grep -q "^{\"step\": 3, \"split\": \"run\", \"run\": \"$run1\", \"resumed_from\": 3, " ||
    fail "metrics.jsonl: the resumed session's header is not at step 3 of run $run1"
echo "ok: run headers at steps 0 and 3, both of run $run1"

step "trainrt report out"
"$TRAINRT" report out >report.out 2>report.err || { cat report.err >&2; fail "report: exit"; }
cat report.out
[ ! -s report.err ] || { cat report.err >&2; fail "report: unexpected warnings"; }
grep -q '^== out (out/metrics.jsonl)$' report.out || fail "summary: no heading for the run"
grep -Eq '^  steps +8 \(8 logged; 1 resume, 4 lines replaced, 0 dropped, 0 malformed\)$' report.out ||
    fail "summary: steps / resume / replaced line wrong"
grep -Eq '^  tokens +256$' report.out || fail "summary: tokens should be 8 x 32 = 256"
grep -Eq '^  train loss +[0-9]+\.[0-9]{4} last, [0-9]+\.[0-9]{4} best \(step [1-8]\)' report.out ||
    fail "summary: no smoothed train loss"
# The best val loss: the lowest of the de-duplicated val lines (steps 3, 6, 8).
best=$(grep '"split": "val"' out/metrics.jsonl | sed -E 's/.*"step": ([0-9]+).*"loss": ([0-9.]+).*/\2 \1/' |
       sort -g | head -n 1)
best_loss=$(printf '%.4f' "${best% *}")
grep -Eq "^  val loss +$best_loss best \(step ${best#* }\), [0-9.]+ last \(3 evals\)$" report.out ||
    fail "summary: val loss line, expected best $best_loss at step ${best#* }"
grep -Eq '^  throughput +[0-9.]+k? tok/s, MFU n/a' report.out || fail "summary: no throughput"
grep -Eq '^  train time +[0-9.]+s' report.out || fail "summary: no train time"
grep -Eq '^  model +gpt2, 1 layer, 2 heads, d_model 32, context 32, vocab 256; [0-9.]+k parameters$' report.out ||
    fail "summary: no model facts from the config"
grep -Eq '^  batch +1 x 2 x 16 = 32 tokens per step' report.out || fail "summary: no batch facts"
grep -Eq '^  acceleration device=cpu .*precision=fp32' report.out || fail "summary: no acceleration line"
grep -Eq '^  config +out/step_00000008$' report.out || fail "summary: not the latest checkpoint's config"
grep -q '^wrote out/report.html (' report.out || fail "report: the default page is not out/report.html"

step "the page"
page=out/report.html
check_page "$page"
for chart in loss-step loss-tokens; do
    expect_points "$page" "$chart" out "train loss \(raw\)" 8
    expect_points "$page" "$chart" out "train loss \(EMA\)" 8
    expect_points "$page" "$chart" out "val loss" 3
done
expect_points "$page" lr out lr 8
expect_points "$page" grad-norm out "grad norm" 8
expect_points "$page" tok-per-s out "tokens/s" 8
grep -q 'no MFU: no &quot;mfu&quot; in the train lines, and runtime.peak_tflops is 0' "$page" ||
    fail "page: the empty MFU chart does not say why"
grep -q '4 line(s) replaced by a later line for the same step' "$page" ||
    fail "page: does not say how many lines were replaced"
grep -q '<pre class="config">' "$page" || fail "page: no run config"
for key in '^\[model\]$' '^n_layer = 1$' '^d_model = 32$' '^\[optim\]$' '^lr = 0.001' \
           '^out_dir = &quot;.*out&quot;$'; do
    sed -n '/<pre class="config">/,/<\/pre>/p' "$page" | grep -Eq -- "$key" ||
        fail "page: the config lacks $key (escaped TOML)"
done
grep -q '<code>device=cpu (auto) (.*precision=fp32' "$page" || fail "page: no acceleration line"
grep -q 'data-report-js' "$page" || fail "page: no script marker"
echo "ok: points per series after de-duplication: train 8, val 3; config and acceleration shown"

step "the page names a config-less run's gap instead of failing (no checkpoint)"
mkdir -p nockpt
cp out/metrics.jsonl nockpt/
"$TRAINRT" report nockpt --html nockpt.html >nockpt.out 2>&1 || { cat nockpt.out >&2; fail "report nockpt: exit"; }
grep -q 'no checkpoint in nockpt (no `latest` file)' nockpt.out || fail "nockpt: summary does not say"
grep -q 'no checkpoint in nockpt (no `latest` file)' nockpt.html || fail "nockpt: page does not say"

# ------------------------------------------------------------------ two runs overlaid
step "two runs overlaid: --label, distinct colours, the default page for several"
"$TRAINRT" train run.toml --set train.out_dir=out2 --set optim.lr=0.003 --steps 4 \
    >train3.out 2>train3.err || { cat train3.err >&2; fail "train out2: exit"; }
"$TRAINRT" report out out2 --label base --label 'lr 3e-3 <b>' --html two.html >two.out 2>two.err ||
    { cat two.err >&2; fail "report two runs: exit"; }
grep -q '^== base (out/metrics.jsonl)$' two.out && grep -q '^== lr 3e-3 <b> (out2/metrics.jsonl)$' two.out ||
    fail "two runs: summary headings"
check_page two.html
expect_points two.html loss-step base "train loss \(EMA\)" 8
expect_points two.html loss-step "lr 3e-3 &lt;b&gt;" "train loss \(EMA\)" 4
expect_points two.html lr "lr 3e-3 &lt;b&gt;" lr 4
grep -q '<b>' two.html && fail "two runs: a label went into the page unescaped"
c1=$(grep -oE 'stroke="#[0-9a-f]{6}"[^>]*data-series="train loss \(EMA\)" data-run="base"' two.html | sed -n 1p | cut -c9-15)
c2=$(grep -oE 'stroke="#[0-9a-f]{6}"[^>]*data-series="train loss \(EMA\)" data-run="lr 3e-3' two.html | sed -n 1p | cut -c9-15)
[ -n "$c1" ] && [ -n "$c2" ] && [ "$c1" != "$c2" ] || fail "two runs: colours '$c1' and '$c2' not distinct"
echo "ok: two runs in $c1 and $c2"
"$TRAINRT" report out out2 >several.out 2>&1 || { cat several.out >&2; fail "report out out2: exit"; }
grep -q '^wrote report.html (' several.out && [ -s report.html ] ||
    fail "several runs: the default page is not ./report.html"

# ------------------------------------------------------------------ several runs in one folder
step "a fresh start in a folder with history is a run of its own; a resume continues its run"
"$TRAINRT" train run.toml --set train.out_dir=hist --steps 4 >hist1.out 2>&1 ||
    { cat hist1.out >&2; fail "train hist: exit"; }
grep -q 'appending a new run' hist1.out && fail "hist: a first run said it appends a new run"
"$TRAINRT" train run.toml --set train.out_dir=hist --fresh --steps 2 >hist2.out 2>&1 ||
    { cat hist2.out >&2; fail "train hist --fresh: exit"; }
grep -q "metrics: appending a new run ([0-9]*T[0-9]*Z-[0-9a-f]*) to [^ ]*hist/metrics.jsonl; earlier runs are kept; load a checkpoint to continue one" hist2.out ||
    { cat hist2.out >&2; fail "hist --fresh: no INFO line saying a new run is appended"; }
# The first run again, from its step-3 checkpoint (the fresh run wrote none).
"$TRAINRT" train run.toml --set train.out_dir=hist --checkpoint hist/step_00000003 --steps 3 \
    >hist3.out 2>&1 || { cat hist3.out >&2; fail "train hist --checkpoint: exit"; }
grep -q 'appending a new run' hist3.out && fail "hist: a resume said it appends a new run"
"$TRAINRT" report hist >hist.out 2>hist.err || { cat hist.err >&2; fail "report hist: exit"; }
cat hist.out
grep -q '^== hist run 1 (hist/metrics.jsonl)$' hist.out && grep -q '^== hist run 2 (hist/metrics.jsonl)$' hist.out ||
    fail "hist: not two runs"
grep -Eq '^  run +[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8} \(1 of 2 in this metrics.jsonl, begun ' hist.out ||
    fail "hist: the first run's id line"
# Run 1: steps 1-4, then 4-6 from its step-3 checkpoint; run 2: steps 1-2. Dropped: only
# run 1's eval at step 4, a branch its resume left (it evaluates at 6).
grep -Eq '^  steps +6 \(6 logged; 1 resume, 1 line replaced, 1 dropped, 0 malformed\)$' hist.out ||
    fail "hist: run 1 lost steps or its resume"
grep -Eq '^  steps +2 \(2 logged; 0 resumes, 0 lines replaced, 0 dropped, 0 malformed\)$' hist.out ||
    fail "hist: run 2's steps"
# The latest checkpoint (step 6) is run 1's: its config goes there, run 2 says so.
grep -Eq '^  config +hist/step_00000006$' hist.out || fail "hist: run 1 lacks the latest checkpoint's config"
grep -q '^  config       not kept for this run: the folder.s latest checkpoint (hist/step_00000006) is hist run 1.s$' hist.out ||
    fail "hist: run 2 does not say whose config the latest checkpoint holds"
check_page hist/report.html
expect_points hist/report.html loss-step "hist run 1" "train loss \(EMA\)" 6
expect_points hist/report.html loss-step "hist run 2" "train loss \(EMA\)" 2
grep -q 'Run <code>[0-9]*T[0-9]*Z-[0-9a-f]*</code>, 2 of 2 in <code>hist/metrics.jsonl</code>' hist/report.html ||
    fail "hist: the page does not say which run of the file run 2 is"

step "runs in a written file: older writers' restarts and resumes, ids, a run resumed twice"
mkdir -p mix
awk 'function t(s) { printf "{\"step\": %d, \"split\": \"train\", \"loss\": %.2f, \"lr\": 0.001, \"grad_norm\": 1, \"tokens\": 32, \"tokens_total\": %d, \"ms\": 1, \"tok_per_s\": 1000}\n", s, 6 - s / 10, s * 32 }
    BEGIN {
    print "{\"step\": 0, \"split\": \"run\", \"version\": \"0.0.9\"}"   # an older writer: no ids
    for (s = 1; s <= 4; s++) t(s)
    print "{\"step\": 0, \"split\": \"run\", \"version\": \"0.0.9\"}"   # its fresh start: run 2
    for (s = 1; s <= 2; s++) t(s)
    # The upgrade: run 2 resumed from its (id-less) step-2 checkpoint, under a new id.
    print "{\"step\": 2, \"split\": \"run\", \"run\": \"R-b\", \"resumed_from\": 2}"
    for (s = 3; s <= 4; s++) t(s)
    print "{\"step\": 0, \"split\": \"run\", \"run\": \"R-c\", \"resumed_from\": null}"  # run 3
    for (s = 1; s <= 3; s++) t(s)
    print "{\"step\": 2, \"split\": \"run\", \"run\": \"R-b\", \"resumed_from\": 2}"  # run 2 again
    for (s = 3; s <= 5; s++) t(s) }' >mix/metrics.jsonl
"$TRAINRT" report mix >mix.out 2>&1 || { cat mix.out >&2; fail "report mix: exit"; }
cat mix.out
[ "$(grep -c '^== mix run [1-3] (mix/metrics.jsonl)$' mix.out)" -eq 3 ] || fail "mix: not three runs"
sed -n '/^== mix run 1 /,/^== /p' mix.out | grep -q "^  run          without an id (an older writer's) (1 of 3 in this metrics.jsonl)$" ||
    fail "mix: run 1 is not the id-less one"
sed -n '/^== mix run 1 /,/^== /p' mix.out | grep -Eq '^  steps +4 \(4 logged; 0 resumes, 0 lines replaced, 0 dropped' ||
    fail "mix: run 1 was rewound by the fresh start after it"
sed -n '/^== mix run 2 /,/^== /p' mix.out | grep -q '^  run          R-b (2 of 3 in this metrics.jsonl)$' ||
    fail "mix: run 2 did not take the id of the run that resumed it"
sed -n '/^== mix run 2 /,/^== /p' mix.out | grep -Eq '^  steps +5 \(5 logged; 2 resumes, 2 lines replaced, 0 dropped' ||
    fail "mix: run 2's resumes"
sed -n '/^== mix run 3 /,$p' mix.out | grep -Eq '^  steps +3 \(3 logged; 0 resumes, 0 lines replaced, 0 dropped' ||
    fail "mix: run 3 lost steps to run 2's resume"
expect_points mix/report.html loss-step "mix run 2" "train loss \(EMA\)" 5
echo "ok: three runs, nothing dropped, each resume in its own run"

# ------------------------------------------------------------------ malformed lines
step "malformed lines are skipped with a warning naming them"
mkdir -p bad
cp -r out/step_00000008 out/latest bad/
{
    sed -n 1,2p out/metrics.jsonl
    echo 'this is not json'
    sed -n '3,$p' out/metrics.jsonl
    echo '{"step": 9, "split": "train", "loss": 5.1, "lr": 0.0'  # a line cut short
} >bad/metrics.jsonl
"$TRAINRT" report bad >bad.out 2>bad.err || { cat bad.err >&2; fail "report bad: exit (malformed lines must not fail it)"; }
cat bad.err
grep -q '^trainrt: warning: bad/metrics.jsonl:3: skipped a malformed line (not a JSON object' bad.err ||
    fail "malformed: no warning naming line 3"
last=$(wc -l <bad/metrics.jsonl)
grep -q "^trainrt: warning: bad/metrics.jsonl:$last: skipped a malformed line" bad.err ||
    fail "malformed: no warning naming the cut line $last"
grep -Eq '^  steps +8 \(8 logged; .*, 2 malformed\)$' bad.out || fail "malformed: summary count"
grep -q '2 malformed line(s) skipped in <code>bad/metrics.jsonl</code>: line 3 ' bad/report.html ||
    fail "malformed: the page does not list them"
expect_points bad/report.html loss-step bad "train loss \(EMA\)" 8

# ------------------------------------------------------------------ odd runs
step "NaN / null / Infinity values are gaps; a one-step run; a log without run headers"
mkdir -p gaps one old
awk 'BEGIN { for (s = 1; s <= 40; s++) {
    l = sprintf("%.3f", 5 - s * 0.05)
    if (s >= 15 && s <= 18) l = "null"; if (s == 25) l = "NaN"; if (s == 30) l = "Infinity"
    printf "{\"step\": %d, \"split\": \"train\", \"loss\": %s, \"lr\": 0.001, \"grad_norm\": 1, \"tokens\": 32, \"tokens_total\": %d, \"ms\": 1, \"tok_per_s\": 1000}\n", s, l, s * 32 } }' \
    >gaps/metrics.jsonl
"$TRAINRT" report gaps >gaps.out 2>&1 || { cat gaps.out >&2; fail "report gaps: exit"; }
expect_points gaps/report.html loss-step gaps "train loss \(raw\)" 34
# The raw line breaks at each gap: 4 pieces (1-14, 19-24, 26-29, 31-40).
d=$(grep -oE '<path class="series" d="[^"]*"[^>]*data-series="train loss \(raw\)"' gaps/report.html | sed -n 1p)
[ "$(grep -o 'M' <<<"$d" | wc -l)" -eq 4 ] || fail "gaps: the raw loss line is not in 4 pieces: $d"
echo '{"step": 1, "split": "train", "loss": 5.5, "lr": 0.001, "grad_norm": 2, "tokens": 32, "tokens_total": 32, "ms": 30, "tok_per_s": 1000}' >one/metrics.jsonl
"$TRAINRT" report one >one.out 2>&1 || { cat one.out >&2; fail "report one: exit"; }
grep -Eq '^  steps +1 \(1 logged' one.out || fail "one step: summary"
expect_points one/report.html loss-step one "train loss \(EMA\)" 1
grep -q '<g class="dots"' one/report.html || fail "one step: the lone point is not drawn as a dot"
check_page one/report.html
# An older writer: no run headers; a resume shows as a step going back (6 -> 4).
awk 'BEGIN { n = split("1 2 3 4 5 6 4 5 6 7", st, " ")
    for (i = 1; i <= n; i++) printf "{\"step\": %d, \"split\": \"train\", \"loss\": %.2f, \"lr\": 0.001, \"grad_norm\": 1, \"tokens\": 32, \"tokens_total\": %d, \"ms\": 1, \"tok_per_s\": 1000}\n", st[i], 6 - i / 10, st[i] * 32 }' \
    >old/metrics.jsonl
"$TRAINRT" report old >old.out 2>&1 || { cat old.out >&2; fail "report old: exit"; }
grep -Eq '^  steps +7 \(7 logged; 1 resume, 3 lines replaced, 0 dropped, 0 malformed\)$' old.out ||
    fail "old log: resume not detected"
grep -q 'acceleration not recorded (no run header' old.out || fail "old log: says nothing of the missing header"

# A constant loss: its smoothed values differ by units in the last place, which once made
# the axis ticks an endless loop (timeout 60 s: a hang fails the test instead of the suite).
mkdir -p flat
awk 'BEGIN { for (s = 1; s <= 200; s++) printf "{\"step\": %d, \"split\": \"train\", \"loss\": 2.302585092994045, \"lr\": 0.001, \"grad_norm\": 1, \"tokens\": 32, \"tokens_total\": %d, \"ms\": 1, \"tok_per_s\": 1000}\n", s, s * 32 }' \
    >flat/metrics.jsonl
timeout 60 "$TRAINRT" report flat >flat.out 2>&1 || { cat flat.out >&2; fail "report flat: exit or hang"; }
expect_points flat/report.html loss-step flat "train loss \(raw\)" 200
check_page flat/report.html

step "a huge run is reduced to a few thousand points per series, spikes kept"
mkdir -p huge
awk 'BEGIN { srand(7); for (s = 1; s <= 60000; s++) {
    l = 3 + 2 * exp(-s / 6000) + 0.1 * rand(); if (s == 31337) l = 42
    printf "{\"step\": %d, \"split\": \"train\", \"loss\": %.4f, \"lr\": 0.0003, \"grad_norm\": %.3f, \"tokens\": 1024, \"tokens_total\": %d, \"ms\": 10, \"tok_per_s\": 100000, \"mfu\": 0.4}\n", s, l, 1 + rand(), s * 1024
    if (s % 500 == 0) printf "{\"step\": %d, \"split\": \"val\", \"loss\": %.4f}\n", s, l } }' >huge/metrics.jsonl
"$TRAINRT" report huge >huge.out 2>&1 || { cat huge.out >&2; fail "report huge: exit"; }
expect_points huge/report.html loss-step huge "train loss \(raw\)" 60000
drawn=$(grep -oE 'data-series="train loss \(raw\)" data-run="huge" data-n="60000" data-drawn="[0-9]+"' huge/report.html |
        sed -n 1p | sed -E 's/.*data-drawn="([0-9]+)"/\1/')
[ -n "$drawn" ] && [ "$drawn" -le 4000 ] && [ "$drawn" -ge 2000 ] || fail "huge: $drawn points drawn, expected 2000-4000"
y1=$(grep -oE '<svg class="chart" id="loss-step"[^>]*data-y1="[0-9.e+]+"' huge/report.html | sed -E 's/.*data-y1="([^"]+)"/\1/')
awk -v y="$y1" 'BEGIN { exit !(y >= 42) }' || fail "huge: the spike (42) is outside the y axis (top $y1)"
grep -Eq '^  throughput +100k tok/s, MFU 40.0%' huge.out || fail "huge: logged MFU not used"
[ "$(stat -c %s huge/report.html)" -lt 1500000 ] || fail "huge: the page is $(stat -c %s huge/report.html) bytes"
echo "ok: 60000 points drawn as $drawn, the spike kept, page $(stat -c %s huge/report.html) bytes"

step "text from metrics.jsonl reaches neither the terminal nor the page as control characters"
mkdir -p esc
# A run header whose strings retitle and clear a terminal, move the cursor, reverse the text,
# break lines, or open a script in the page.
cat >esc/metrics.jsonl <<'EOF'
{"split":"run","step":0,"version":"\u001b]0;pwned\u0007\u001b[2J","model":"m\r\u001b[1Afake <script>alert(1)</script>","time":"\u202e\u2028\u009b"}
{"split":"train","step":1,"loss":1}
EOF
"$TRAINRT" report esc --html esc/r.html >esc.out 2>esc.err || fail "report of esc: $(cat esc.err)"
for f in esc.out esc.err esc/r.html; do
    LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$f" && fail "$f holds a control character"
    LC_ALL=C.UTF-8 grep -qP '[\x{80}-\x{9f}\x{2028}\x{2029}\x{202e}]' "$f" && fail "$f holds an unsafe character"
done
grep -qF 'version      libtrainrt \x1b]0;pwned\x07\x1b[2J (session from step 0, \u202e\u2028\u009b)' esc.out ||
    fail "the summary does not show the header's control characters as escapes: $(cat esc.out)"
grep -qF 'm\x0d\x1b[1Afake &lt;script&gt;alert(1)&lt;/script&gt;' esc/r.html ||
    fail "the page does not show the model line escaped"
grep -q '<script>alert' esc/r.html && fail "the page holds the log's <script>"
echo "ok: control characters shown as escapes"

# ------------------------------------------------------------------ errors
step "error paths"
expect_failure missing_dir 1 "no folder 'nope': give a run's train.out_dir" "$TRAINRT" report nope
mkdir -p empty_dir
expect_failure no_metrics 1 "no empty_dir/metrics.jsonl (missing): is 'empty_dir' a run's train.out_dir" \
    "$TRAINRT" report empty_dir
mkdir -p empty_file
: >empty_file/metrics.jsonl
expect_failure empty_metrics 1 "empty_file/metrics.jsonl holds no training step (0 lines" \
    "$TRAINRT" report empty_file
mkdir -p junk
printf 'garbage\n{"step": 1, "split": "val", "loss": 5}\n' >junk/metrics.jsonl
expect_failure only_junk 1 "junk/metrics.jsonl holds no training step (2 lines, 1 of them malformed" \
    "$TRAINRT" report junk
expect_failure one_bad_of_two 1 "no folder 'nope'" "$TRAINRT" report out nope
[ -f report.html.tmp ] && fail "a failed report left a temporary file"
expect_failure not_a_dir 1 "'run.toml' is not a folder" "$TRAINRT" report run.toml
expect_failure no_args 2 "trainrt report: needs at least one OUT_DIR" "$TRAINRT" report
expect_failure bad_option 2 "unknown option '--svg'" "$TRAINRT" report out --svg x
expect_failure labels 2 "2 --label for 1 OUT_DIR" "$TRAINRT" report out --label a --label b
expect_failure no_value 2 "option '--html' needs a value" "$TRAINRT" report out --html
expect_failure unwritable 1 "cannot write no/such/dir/r.html.tmp" "$TRAINRT" report out --html no/such/dir/r.html

step "help"
"$TRAINRT" report --help >help.out
grep -q '^usage: trainrt report OUT_DIR \[OUT_DIR...\] \[--html FILE\] \[--label NAME\]...' help.out ||
    fail "report --help: no usage line"
"$TRAINRT" --help | grep -q '^  report OUT_DIR' || fail "trainrt --help does not list report"
echo "PASS: report_test"

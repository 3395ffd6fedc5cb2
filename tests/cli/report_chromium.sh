#!/usr/bin/env bash
# `trainrt report`'s page in a real browser (headless Chromium, file://): its script runs
# without a console message or an uncaught error, hovering a chart fills the read-out, and a
# screenshot is a PNG of sensible size. The checker is first shown to fail on pages with a
# deliberate error (a thrown exception; an error inside the report's own script; a
# console.error), so a silent checker cannot pass.
#   usage: report_chromium.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR CHROMIUM
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
CHROMIUM=$4
TEXT="$SRC/examples/data/tinyshakespeare.txt"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
command -v "$CHROMIUM" >/dev/null || fail "no chromium at $CHROMIUM"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# Headless Chromium on a page; its own profile, no sandbox (CI runs as root), no GPU.
#   browse PAGE ARGS...   (stdout: what --dump-dom prints; stderr to browse.log)
browse() {
    local page=$1
    shift
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0 \
        --virtual-time-budget=3000 "$@" "file://$WORK/$page" 2>browse.log
}

# The probe: the page with a first script that records any uncaught error and any
# console.error/warn as data-js-error on <html>, and a last one that moves the pointer over
# every chart (the read-out's code runs) and records what the read-out showed.
make_probe() {
    local page=$1 probe=$2
    local head='<script>(function(){var h=document.documentElement;function mark(m){h.setAttribute("data-js-error",String(m));}window.addEventListener("error",function(e){mark(e.message||"error");});["error","warn"].forEach(function(k){var f=console[k];console[k]=function(){mark("console."+k+": "+Array.prototype.join.call(arguments," "));return f.apply(console,arguments);};});})();</script>'
    local tail='<script>(function(){var h=document.documentElement,rows=0;Array.prototype.forEach.call(document.querySelectorAll("svg.chart"),function(svg){var b=svg.getBoundingClientRect();svg.dispatchEvent(new MouseEvent("mousemove",{clientX:b.left+b.width*0.55,clientY:b.top+b.height*0.5,bubbles:true}));var t=document.getElementById("tip");if(t&&t.style.display==="block")rows+=t.childNodes.length;svg.dispatchEvent(new MouseEvent("mouseleave",{}));});h.setAttribute("data-probe-rows",String(rows));})();</script>'
    # (index/substr, not sub(): a replacement's "&" would be the matched text)
    awk -v head="$head" -v tail="$tail" '
        !h && (i = index($0, "<head>")) { $0 = substr($0, 1, i + 5) head substr($0, i + 6); h = 1 }
        !t && (i = index($0, "</body>")) { $0 = substr($0, 1, i - 1) tail substr($0, i); t = 1 }
        { print }
        END { if (!h || !t) exit 1 }' "$page" >"$probe"
}

# check_page PAGE: 0 when the page loads clean (reasons on stderr otherwise):
#  1. loaded as it is: Chromium logs no CONSOLE line (a console message or an uncaught
#     error) and the report's script set its marker (it ran to the end);
#  2. the probe: no data-js-error, the marker set, the read-out showed rows.
check_page() {
    local page=$1 ok=0
    browse "$page" --dump-dom >dom.html || { echo "chromium failed on $page" >&2; cat browse.log >&2; return 1; }
    if grep -q 'CONSOLE' browse.log; then
        echo "$page: console output: $(grep 'CONSOLE' browse.log | head -n 3)" >&2
        ok=1
    fi
    grep -q '<html[^>]* data-report-js="ok"' dom.html ||
        { echo "$page: the report's script did not finish (no data-report-js marker)" >&2; ok=1; }
    make_probe "$page" "probe_$page" || { echo "$page: no <head> or </body> to probe" >&2; return 1; }
    browse "probe_$page" --dump-dom >probe_dom.html ||
        { echo "chromium failed on probe_$page" >&2; cat browse.log >&2; return 1; }
    if grep -q 'data-js-error=' probe_dom.html; then
        echo "$page: $(grep -o 'data-js-error="[^"]*"' probe_dom.html)" >&2
        ok=1
    fi
    grep -q 'data-report-js="ok"' probe_dom.html ||
        { echo "$page (probe): the report's script did not finish" >&2; ok=1; }
    local rows
    rows=$(grep -o 'data-probe-rows="[0-9]*"' probe_dom.html | grep -o '[0-9]*' || true)
    [ -n "$rows" ] || { echo "$page (probe): the hover probe did not run" >&2; ok=1; }
    [ "${rows:-0}" -gt 0 ] || { echo "$page (probe): hovering the charts showed no read-out" >&2; ok=1; }
    [ "$ok" -eq 0 ] && echo "clean: $page (read-out rows while hovering: $rows)"
    return "$ok"
}

# ------------------------------------------------------------------ a real report
step "two tiny runs, one resumed, reported"
"$TRAINRT" prepare --text "$TEXT" --out data --val-fraction 0.1 >/dev/null
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
steps = 12
eval_every = 4
eval_batches = 2
checkpoint_every = 4
out_dir = "a"
[optim]
lr = 0.002
[runtime]
threads = 1
log_every = 1
TOML
"$TRAINRT" train run.toml --steps 8 >/dev/null 2>train.err || { cat train.err >&2; fail "train a"; }
"$TRAINRT" train run.toml --checkpoint a/step_00000004 >/dev/null 2>train.err || { cat train.err >&2; fail "resume a"; }
"$TRAINRT" train run.toml --set train.out_dir=b --set optim.lr=0.0005 >/dev/null 2>train.err ||
    { cat train.err >&2; fail "train b"; }
"$TRAINRT" report a b --html report.html >report.out 2>&1 || { cat report.out >&2; fail "report"; }

# ------------------------------------------------------------------ the checker can fail
step "the checker fails on pages with a deliberate error"
# An uncaught exception in a script of the page's own.
sed 's|</body>|<script>deliberately_undefined_function();</script></body>|' report.html >broken_throw.html
# An error inside the report's script itself (it stops before its marker).
sed "s|'use strict';|'use strict'; null.deliberate;|" report.html >broken_script.html
grep -q 'null.deliberate' broken_script.html || fail "could not break the report's script"
# A console.error without an exception.
sed 's|</body>|<script>console.error("deliberate");</script></body>|' report.html >broken_console.html
for page in broken_throw.html broken_script.html broken_console.html; do
    if check_page "$page" 2>reasons.txt; then
        fail "the checker passed $page, which has a deliberate error"
    fi
    echo "ok: the checker fails $page: $(head -n 1 reasons.txt)"
done
# Each way of catching an error catches these on its own: the CONSOLE log scan, the
# in-page probe, the report script's end-of-run marker.
check_page broken_throw.html 2>reasons.txt || true
grep -q 'console output: .*Uncaught ReferenceError: deliberately_undefined_function' reasons.txt ||
    fail "the CONSOLE log scan missed the exception: $(cat reasons.txt)"
grep -q 'data-js-error="Uncaught ReferenceError: deliberately_undefined_function' reasons.txt ||
    fail "the probe missed the exception: $(cat reasons.txt)"
check_page broken_script.html 2>reasons.txt || true
grep -q "console output: .*Uncaught TypeError" reasons.txt &&
    grep -q 'data-js-error="Uncaught TypeError' reasons.txt &&
    grep -q "the report's script did not finish (no data-report-js marker)" reasons.txt ||
    fail "an error in the report's script: not caught three ways: $(cat reasons.txt)"
check_page broken_console.html 2>reasons.txt || true
grep -q 'console output: .*"deliberate"' reasons.txt &&
    grep -q 'data-js-error="console.error: deliberate"' reasons.txt ||
    fail "a console.error: not caught two ways: $(cat reasons.txt)"
echo "ok: each deliberate error caught by every check that applies to it"

# ------------------------------------------------------------------ the report loads clean
step "the report loads without console errors, and its read-out works"
check_page report.html || fail "report.html: errors in the browser (above)"
# The page's charts are in the DOM Chromium built: 6 <svg> with their paths.
[ "$(grep -o '<svg class="chart"' dom.html | wc -l)" -eq 6 ] || fail "the browser's DOM lacks the 6 charts"

step "a screenshot"
browse report.html --hide-scrollbars --window-size=1280,2200 --screenshot="$WORK/report.png" >/dev/null ||
    { cat browse.log >&2; fail "screenshot: chromium failed"; }
[ -f report.png ] || fail "screenshot: no report.png"
[ "$(od -An -tx1 -N8 report.png | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "screenshot: not a PNG"
# IHDR: width and height, big-endian, at bytes 16 and 20.
w=$(od -An -tu1 -j16 -N4 report.png | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
h=$(od -An -tu1 -j20 -N4 report.png | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
size=$(stat -c %s report.png)
[ "$w" -eq 1280 ] && [ "$h" -eq 2200 ] || fail "screenshot: ${w}x$h, expected 1280x2200"
# A blank page compresses to a few KB; charts, text and tables take far more.
[ "$size" -gt 40000 ] && [ "$size" -lt 5000000 ] || fail "screenshot: $size bytes"
echo "ok: report.png ${w}x$h, $size bytes"
echo "PASS: report_chromium"

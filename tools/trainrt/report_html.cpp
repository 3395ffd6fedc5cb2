// `trainrt report`'s HTML page (report_html.h).
#include "report_html.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include <trainrt/trainrt.h>

#include "report_svg.h"

namespace trainrt_cli {
namespace {

const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
const char* const kValColor = "#ff7f0e";  // one run: val in its own colour
const char* const kKeyColor = "#555555";  // several runs: the legend's style key

std::string g(const char* f, double v) {
    if (!std::isfinite(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

using Pick = std::function<double(const TrainPoint&)>;

Series train_series(const RunData& r, const std::string& name, const std::string& color,
                    Series::Style style, const Pick& x, const Pick& y) {
    Series s;
    s.name = name;
    s.run = r.label;
    s.color = color;
    s.style = style;
    for (const TrainPoint& p : r.train) {
        s.x.push_back(x(p));
        s.y.push_back(y(p));
    }
    return s;
}

const Pick by_step = [](const TrainPoint& p) { return static_cast<double>(p.step); };
const Pick by_tokens = [](const TrainPoint& p) { return p.tokens_total; };

Chart loss_chart(const std::vector<RunData>& runs, bool tokens) {
    Chart c;
    c.id = tokens ? "loss-tokens" : "loss-step";
    c.title = tokens ? "Loss vs tokens" : "Loss vs step";
    c.x_label = tokens ? "tokens" : "step";
    c.y_label = "loss (nats/token)";
    c.x_integer = true;
    c.empty_note = tokens ? "no tokens_total in the train lines" : "no finite loss";
    const bool one = runs.size() == 1;
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunData& r = runs[i];
        const std::string color = run_color(i);
        const Pick& x = tokens ? by_tokens : by_step;
        c.series.push_back(train_series(r, "train loss (raw)", color, Series::Faint, x,
                                        [](const TrainPoint& p) { return p.loss; }));
        c.series.push_back(train_series(r, "train loss (EMA)", color, Series::Solid, x,
                                        [](const TrainPoint& p) { return p.loss_ema; }));
        Series v;
        v.name = "val loss";
        v.run = r.label;
        v.color = one ? kValColor : color;
        v.style = Series::Dashed;
        v.markers = true;
        for (const ValPoint& p : r.val) {
            v.x.push_back(tokens ? p.tokens_total : static_cast<double>(p.step));
            v.y.push_back(p.loss);
        }
        c.series.push_back(v);
        if (!one) c.legend.push_back({r.label, color, Series::Solid, false});
    }
    char window[64];
    std::snprintf(window, sizeof window, "train, EMA over ~%.0f logged steps",
                  runs[0].ema_window);
    const std::string key = one ? run_color(0) : kKeyColor;
    if (runs[0].ema_window > 1 || !one) {
        c.legend.push_back({one ? window : "train (EMA)", key, Series::Solid, false});
        c.legend.push_back({"train (raw)", key, Series::Faint, false});
    } else {
        c.legend.push_back({"train (too few steps to smooth)", key, Series::Solid, false});
    }
    c.legend.push_back({"val", one ? kValColor : kKeyColor, Series::Dashed, true});
    return c;
}

Chart simple_chart(const std::vector<RunData>& runs, const std::string& id,
                   const std::string& title, const std::string& name,
                   const std::string& y_label, const std::string& empty_note, const Pick& y) {
    Chart c;
    c.id = id;
    c.title = title;
    c.x_label = "step";
    c.y_label = y_label;
    c.empty_note = empty_note;
    for (size_t i = 0; i < runs.size(); ++i) {
        c.series.push_back(
            train_series(runs[i], name, run_color(i), Series::Solid, by_step, y));
        c.legend.push_back({runs.size() == 1 ? name : runs[i].label, run_color(i),
                            Series::Solid, false});
    }
    return c;
}

std::vector<Chart> charts(const std::vector<RunData>& runs) {
    std::vector<Chart> out;
    out.push_back(loss_chart(runs, false));
    out.push_back(loss_chart(runs, true));
    out.push_back(simple_chart(runs, "lr", "Learning rate", "lr", "learning rate",
                               "no lr in the train lines",
                               [](const TrainPoint& p) { return p.lr; }));
    out.push_back(simple_chart(runs, "grad-norm", "Gradient norm (before clipping)",
                               "grad norm", "global L2 norm", "no grad_norm in the train lines",
                               [](const TrainPoint& p) { return p.grad_norm; }));
    out.push_back(simple_chart(runs, "tok-per-s", "Throughput", "tokens/s", "tokens / s",
                               "no tok_per_s in the train lines",
                               [](const TrainPoint& p) { return p.tok_per_s; }));
    bool computed = false;
    for (const RunData& r : runs) computed = computed || r.mfu_computed;
    out.push_back(simple_chart(
        runs, "mfu", computed ? "MFU (from runtime.peak_tflops)" : "MFU", "MFU",
        "MFU (% of peak)",
        "no MFU: no \"mfu\" in the train lines, and runtime.peak_tflops is 0",
        [](const TrainPoint& p) { return p.mfu * 100; }));
    return out;
}

const char* const kStyle = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 24px auto; max-width: 1360px; padding: 0 16px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #666; margin: 0 0 16px; }
table { border-collapse: collapse; margin: 8px 0; }
table.summary { display: block; overflow-x: auto; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 10px; text-align: right;
         white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f5f5f5; font-weight: 600; white-space: normal; vertical-align: bottom; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
          margin-right: 6px; vertical-align: -1px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr));
          gap: 14px; }
.charts figure { margin: 0; border: 1px solid #e3e3e3; border-radius: 6px; padding: 6px; }
svg.chart { width: 100%; height: auto; display: block; font: 11px system-ui, sans-serif; }
svg.chart .title { font-size: 14px; font-weight: 600; fill: #222; }
svg.chart .grid line { stroke: #ececec; stroke-width: 1; }
svg.chart .axis rect { stroke: #999; }
svg.chart .ytick { text-anchor: end; fill: #555; }
svg.chart .xtick { text-anchor: middle; fill: #555; }
svg.chart .xlabel, svg.chart .ylabel { text-anchor: middle; fill: #333; }
svg.chart .note { text-anchor: middle; fill: #888; font-size: 13px; }
svg.chart .legend text { fill: #333; }
svg.chart line.cursor { stroke: #888; stroke-width: 1; stroke-dasharray: 3 3; }
.warn { color: #8a4b00; background: #fff6e5; border-left: 4px solid #f0a030;
        padding: 6px 10px; margin: 8px 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0; }
dl.facts dt { color: #666; } dl.facts dd { margin: 0; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: 8px 10px; overflow: auto;
      font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
#tip { position: fixed; display: none; pointer-events: none; background: rgba(255,255,255,.96);
       border: 1px solid #bbb; border-radius: 4px; padding: 4px 8px; font-size: 12px;
       box-shadow: 0 1px 4px rgba(0,0,0,.15); z-index: 10; }
)CSS";

// Hover read-outs: the values of the points nearest the pointer, read back from each path's
// coordinates and the axis ranges on its <svg>. The charts are complete without it.
const char* const kScript = R"JS(
(function () {
  'use strict';
  var tip = document.getElementById('tip');
  function points(d) {
    var out = [], re = /(-?[0-9.]+),(-?[0-9.]+)/g, m;
    while ((m = re.exec(d)) !== null) out.push([parseFloat(m[1]), parseFloat(m[2])]);
    return out;
  }
  function show(v) { return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toPrecision(5)); }
  Array.prototype.forEach.call(document.querySelectorAll('svg.chart'), function (svg) {
    var a = svg.dataset, x0 = +a.x0, x1 = +a.x1, y0 = +a.y0, y1 = +a.y1;
    var left = +a.left, top = +a.top, pw = +a.pw, ph = +a.ph;
    var cursor = svg.querySelector('line.cursor');
    var series = [];
    Array.prototype.forEach.call(svg.querySelectorAll('path.series'), function (p) {
      if (p.hasAttribute('stroke-opacity')) return;  // raw points: the smoothed line speaks
      var pts = points(p.getAttribute('d') || '');
      if (pts.length) series.push({ name: p.getAttribute('data-series'), run: p.getAttribute('data-run'),
                                    color: p.getAttribute('stroke'), pts: pts });
    });
    function hide() { tip.style.display = 'none'; if (cursor) cursor.setAttribute('visibility', 'hidden'); }
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('mousemove', function (ev) {
      var box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
      if (!vb || !box.width) return;
      var sx = (ev.clientX - box.left) * vb.width / box.width;
      if (sx < left || sx > left + pw || !series.length) { hide(); return; }
      var rows = [];
      series.forEach(function (s) {
        var lo = 0, hi = s.pts.length - 1;
        while (lo < hi) { var mid = (lo + hi) >> 1; if (s.pts[mid][0] < sx) lo = mid + 1; else hi = mid; }
        if (lo > 0 && Math.abs(s.pts[lo - 1][0] - sx) <= Math.abs(s.pts[lo][0] - sx)) lo -= 1;
        var p = s.pts[lo];
        if (Math.abs(p[0] - sx) > 15) return;
        rows.push({ s: s, x: x0 + (p[0] - left) / pw * (x1 - x0), y: y0 + (top + ph - p[1]) / ph * (y1 - y0) });
      });
      if (!rows.length) { hide(); return; }
      while (tip.firstChild) tip.removeChild(tip.firstChild);
      var head = document.createElement('div');
      head.textContent = a.xlabel + ' ' + show(rows[0].x);
      tip.appendChild(head);
      rows.forEach(function (r) {
        var line = document.createElement('div'), sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = r.s.color;
        line.appendChild(sw);
        line.appendChild(document.createTextNode((r.s.run ? r.s.run + ' ' : '') + r.s.name + ': ' + show(r.y)));
        tip.appendChild(line);
      });
      tip.style.display = 'block';
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
      if (cursor) {
        var cx = String(left + (rows[0].x - x0) / (x1 - x0) * pw);
        cursor.setAttribute('x1', cx);
        cursor.setAttribute('x2', cx);
        cursor.setAttribute('visibility', 'visible');
      }
    });
  });
  document.documentElement.setAttribute('data-report-js', 'ok');
})();
)JS";

std::string notes_of(const RunData& r) {
    std::string out;
    if (r.runs_in_file > 1 || !r.run_id.empty())
        out += "<p>Run " +
               (r.run_id.empty() ? std::string("without an id (an older writer&#39;s)")
                                 : "<code>" + escape_html(r.run_id) + "</code>") +
               ", " + std::to_string(r.index) + " of " + std::to_string(r.runs_in_file) +
               " in <code>" + escape_html(r.metrics_path) + "</code>" +
               (r.headers.empty() ? "" : ", begun " + escape_html(r.headers.front().time)) +
               ".</p>\n";
    if (r.resumes > 0 || r.replaced > 0 || r.dropped > 0) {
        out += "<p>" + std::to_string(r.resumes) + " resume" + (r.resumes == 1 ? "" : "s");
        out += " detected: " + std::to_string(r.replaced) +
               " line(s) replaced by a later line for the same step (the later line is the "
               "one the continued run took)";
        if (r.dropped > 0)
            out += ", " + std::to_string(r.dropped) +
                   " line(s) dropped (steps after a resume point that the continued run "
                   "did not reach again)";
        out += ".</p>\n";
    }
    if (!r.malformed_lines.empty()) {
        out += "<p class=\"warn\">" + std::to_string(r.malformed_lines.size()) +
               " malformed line(s) skipped in <code>" + escape_html(r.metrics_path) +
               "</code>: ";
        for (size_t i = 0; i < r.malformed_lines.size() && i < 20; ++i)
            out += (i ? "; " : "") + std::string("line ") +
                   std::to_string(r.malformed_lines[i]) + " (" +
                   escape_html(r.malformed_why[i]) + ")";
        if (r.malformed_lines.size() > 20) out += "; ...";
        out += "</p>\n";
    }
    if (r.ignored > 0)
        out += "<p>" + std::to_string(r.ignored) +
               " line(s) of other kinds (a newer writer's) ignored.</p>\n";
    return out;
}

std::string run_section(const RunData& r, size_t i) {
    std::string o = "<section class=\"run\" id=\"run-" + std::to_string(i) + "\">\n<h2>";
    o += "<span class=\"swatch\" style=\"background:" + std::string(run_color(i)) + "\"></span>" +
         escape_html(r.label) + " <small><code>" + escape_html(r.dir) + "</code></small></h2>\n";
    o += notes_of(r);
    o += "<dl class=\"facts\">\n";
    for (const auto& [k, v] : r.facts)
        o += "<dt>" + escape_html(k) + "</dt><dd>" + escape_html(v) + "</dd>\n";
    o += "</dl>\n";
    // What each session said of itself (run headers), the same line once.
    o += "<h3>Acceleration and precision</h3>\n";
    if (r.headers.empty()) {
        o += "<p>Not recorded: this metrics.jsonl has no run header line (written by "
             "libtrainrt since the report came; the session's <code>acceleration:</code> "
             "log line says it).</p>\n";
    } else {
        std::set<std::string> seen;
        o += "<table><tr><th>from step</th><th>started (UTC)</th><th>version</th>"
             "<th style=\"text-align:left\">acceleration / model</th></tr>\n";
        for (const RunHeader& h : r.headers) {
            const std::string what = h.version + "\n" + h.acceleration + "\n" + h.model;
            const bool repeat = !seen.insert(what).second;
            o += "<tr><td>" + std::to_string(h.step) + "</td><td>" + escape_html(h.time) +
                 "</td><td>" + escape_html(h.version) + "</td><td style=\"text-align:left;"
                 "white-space:normal\">" +
                 (repeat ? std::string("as above")
                         : "<code>" + escape_html(h.acceleration) + "</code><br>" +
                               escape_html(h.model)) +
                 "</td></tr>\n";
        }
        o += "</table>\n";
    }
    o += "<h3>Run config</h3>\n";
    if (!r.config_error.empty()) o += "<p class=\"warn\">" + escape_html(r.config_error) + "</p>\n";
    if (!r.config_toml.empty())
        o += "<details open><summary>the resolved config of <code>" +
             escape_html(r.checkpoint) + "</code> (TOML)</summary>\n<pre class=\"config\">" +
             escape_html(r.config_toml) + "</pre></details>\n";
    return o + "</section>\n";
}

}  // namespace

const char* run_color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

std::string render_report(const std::vector<RunData>& runs) {
    std::string labels;
    for (const RunData& r : runs) labels += (labels.empty() ? "" : ", ") + r.label;
    std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta name=\"generator\" content=\"trainrt report (libtrainrt " +
                    std::string(trainrt_version_string()) + ")\">\n<title>trainrt report: " +
                    escape_html(labels) + "</title>\n<style>" + kStyle + "</style>\n</head>\n"
                    "<body>\n<h1>Training report</h1>\n<p class=\"sub\">" +
                    std::to_string(runs.size()) + (runs.size() == 1 ? " run" : " runs") +
                    ": " + escape_html(labels) + " &middot; made by <code>trainrt report</code> "
                    "(libtrainrt " + escape_html(trainrt_version_string()) + ")</p>\n";

    // Summary table. "EMA" heads the train loss only when a run's loss was smoothed: with
    // too few logged steps its window is 1 and the values are the raw ones (ema_loss).
    bool any_smoothed = false, any_raw = false;
    for (const RunData& r : runs) (r.ema_window > 1 ? any_smoothed : any_raw) = true;
    o += std::string("<table class=\"summary\">\n<tr><th>run</th><th>steps</th><th>tokens</th>") +
         (any_smoothed ? "<th>train loss (EMA) last</th>" : "<th>train loss last</th>") +
         "<th>best (step)</th><th>val loss best (step)</th>"
         "<th>last val</th><th>tok/s (tail)</th><th>MFU (tail)</th><th>train time</th>"
         "<th>resumes</th><th>lines replaced</th><th>malformed</th></tr>\n";
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunData& r = runs[i];
        const RunSummary s = summarize(r);
        o += "<tr><td><span class=\"swatch\" style=\"background:" + std::string(run_color(i)) +
             "\"></span><a href=\"#run-" + std::to_string(i) + "\">" + escape_html(r.label) +
             "</a></td><td>" + std::to_string(s.steps) + "</td><td>" + short_count(s.tokens) +
             "</td><td>" + g("%.4f", s.last_loss_ema) +
             (any_smoothed && r.ema_window <= 1 ? " (raw)" : "") + "</td><td>" +
             g("%.4f", s.best_loss_ema) + " (" + std::to_string(s.best_loss_step) + ")</td><td>" +
             (std::isfinite(s.best_val)
                  ? g("%.4f", s.best_val) + " (" + std::to_string(s.best_val_step) + ")"
                  : std::string("no eval")) +
             "</td><td>" + g("%.4f", s.last_val) + "</td><td>" + short_count(s.tok_per_s) +
             "</td><td>" + (std::isfinite(s.mfu) ? g("%.1f%%", s.mfu * 100) : "n/a") +
             "</td><td>" + short_duration(s.train_seconds) + "</td><td>" +
             std::to_string(r.resumes) + "</td><td>" + std::to_string(r.replaced) +
             "</td><td>" + std::to_string(r.malformed_lines.size()) + "</td></tr>\n";
    }
    o += "</table>\n<p class=\"sub\">" +
         std::string(!any_smoothed ? "Train loss not smoothed (too few logged steps). "
                     : any_raw ? "Train loss smoothed by an exponential moving average (faint: "
                                 "the raw values); (raw): too few logged steps to smooth. "
                               : "Train loss smoothed by an exponential moving average (faint: "
                                 "the raw values). ") +
         "tok/s and MFU: mean over the last fifth of the logged "
         "steps. Train time: the sum of the step times (evals and checkpoints not included). "
         "Gaps in a line: values missing or not finite.</p>\n";

    o += "<section class=\"charts\">\n";
    for (const Chart& c : charts(runs)) o += "<figure>" + render_chart(c) + "</figure>\n";
    o += "</section>\n";
    for (size_t i = 0; i < runs.size(); ++i) o += run_section(runs[i], i);
    o += "<div id=\"tip\"></div>\n<script>" + std::string(kScript) + "</script>\n";
    o += "</body>\n</html>\n";
    return o;
}

}  // namespace trainrt_cli

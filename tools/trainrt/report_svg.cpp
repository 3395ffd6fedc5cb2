// `trainrt report`'s SVG charts (report_svg.h).
#include "report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "report_data.h"

namespace trainrt_cli {
namespace {

constexpr double kWidth = 640, kLeft = 64, kRight = 16, kBottom = 42, kPlotHeight = 270;
constexpr double kCharWidth = 6.2;  // of 11px sans-serif text, roughly: legend layout

bool finite(double x) { return std::isfinite(x); }

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string px(double v) { return fmt("%.1f", v); }

// Decimals that show every multiple of step exactly (up to 6).
int decimals_for(double step) {
    for (int d = 0; d < 6; ++d) {
        const double scaled = step * std::pow(10.0, d);
        if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
    }
    return 6;
}

std::string dash_of(Series::Style style) {
    return style == Series::Dashed ? " stroke-dasharray=\"6 4\"" : "";
}

struct Frame {
    double top, plot_w, plot_h;
    Axis x, y;
    double map_x(double v) const { return kLeft + (v - x.lo) / (x.hi - x.lo) * plot_w; }
    double map_y(double v) const { return top + plot_h - (v - y.lo) / (y.hi - y.lo) * plot_h; }
};

// The legend's items laid out in rows within the plot's width; returns the rows' height.
double legend_height(const std::vector<LegendItem>& items, double width) {
    if (items.empty()) return 0;
    double x = 0;
    int rows = 1;
    for (const LegendItem& it : items) {
        const double w = 26 + kCharWidth * static_cast<double>(it.text.size()) + 14;
        if (x > 0 && x + w > width) {
            ++rows;
            x = 0;
        }
        x += w;
    }
    return rows * 16.0;
}

std::string render_legend(const std::vector<LegendItem>& items, double top, double width) {
    std::string out = "<g class=\"legend\">";
    double x = 0, y = top;
    for (const LegendItem& it : items) {
        const double w = 26 + kCharWidth * static_cast<double>(it.text.size()) + 14;
        if (x > 0 && x + w > width) {
            x = 0;
            y += 16;
        }
        const double x0 = kLeft + x;
        const std::string opacity = it.style == Series::Faint ? " stroke-opacity=\"0.3\"" : "";
        out += "<line x1=\"" + px(x0) + "\" y1=\"" + px(y - 4) + "\" x2=\"" + px(x0 + 20) +
               "\" y2=\"" + px(y - 4) + "\" stroke=\"" + it.color + "\" stroke-width=\"2\"" +
               opacity + dash_of(it.style) + "/>";
        if (it.marker)
            out += "<circle cx=\"" + px(x0 + 10) + "\" cy=\"" + px(y - 4) + "\" r=\"3\" fill=\"" +
                   it.color + "\"/>";
        out += "<text x=\"" + px(x0 + 26) + "\" y=\"" + px(y) + "\">" + escape_html(it.text) +
               "</text>";
        x += w;
    }
    return out + "</g>";
}

}  // namespace

std::string escape_html(const std::string& text) {
    const std::string s = printable(text, true);  // no control characters in the page either
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

Axis nice_axis(double lo, double hi, int target, bool integer) {
    Axis a;
    if (!finite(lo) || !finite(hi)) lo = 0, hi = 1;
    if (hi < lo) std::swap(lo, hi);
    if (integer && hi - lo < 2) {
        lo = std::max(0.0, lo - 1);
        hi = lo + 2 > hi ? lo + 2 : hi;
    }
    // A range of a few units in the last place (a constant series smoothed) is a flat line:
    // widened like one, as steps of 1e-16 would give ticks beyond counting.
    if (hi - lo <= 1e-9 * std::max(std::fabs(lo), std::fabs(hi))) {
        const double d = lo != 0 ? std::fabs(lo) * 0.05 : 1;
        lo -= d;
        hi += d;
    }
    const double raw = (hi - lo) / std::max(1, target);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
    if (integer) step = std::max(1.0, std::round(step));
    const double k_lo = std::floor(lo / step + 1e-9), k_hi = std::ceil(hi / step - 1e-9);
    a.step = step;
    a.lo = k_lo * step;
    a.hi = k_hi * step;
    // Counted in integers (k_lo may be past 2^53, where k += 1 no longer moves), and at most a
    // few hundred whatever the data.
    const int64_t n = static_cast<int64_t>(std::llround(std::min(k_hi - k_lo, 1000.0)));
    for (int64_t i = 0; i <= n; ++i) {
        double v = (k_lo + static_cast<double>(i)) * step;
        if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0"
        a.ticks.push_back(v);
    }
    return a;
}

std::string tick_label(double v, const Axis& axis) {
    if (v == 0) return "0";
    const double a = std::max(std::fabs(axis.lo), std::fabs(axis.hi));
    if (a >= 1e4) {
        const char* suffix = "k";
        double unit = 1e3;
        if (a >= 1e12) suffix = "T", unit = 1e12;
        else if (a >= 1e9) suffix = "G", unit = 1e9;
        else if (a >= 1e6) suffix = "M", unit = 1e6;
        char f[16];
        std::snprintf(f, sizeof f, "%%.%df%s", decimals_for(axis.step / unit), suffix);
        return fmt(f, v / unit);
    }
    if (a < 1e-2) {
        const int e = static_cast<int>(std::floor(std::log10(a)));
        const double unit = std::pow(10.0, e);
        char f[24];
        std::snprintf(f, sizeof f, "%%.%dfe%d", decimals_for(axis.step / unit), e);
        return fmt(f, v / unit);
    }
    char f[16];
    std::snprintf(f, sizeof f, "%%.%df", decimals_for(axis.step));
    return fmt(f, v);
}

std::vector<long> downsample(const std::vector<double>& y, size_t buckets) {
    std::vector<long> keep;
    const size_t n = y.size();
    if (n <= 2 * buckets) {
        for (size_t i = 0; i < n; ++i) keep.push_back(static_cast<long>(i));
        return keep;
    }
    const size_t size = (n + buckets - 1) / buckets;
    for (size_t s = 0; s < n; s += size) {
        const size_t e = std::min(n, s + size);
        long lo = -1, hi = -1;
        bool gap = false;
        for (size_t i = s; i < e; ++i) {
            if (!finite(y[i])) {
                gap = true;
                continue;
            }
            if (lo < 0 || y[i] < y[static_cast<size_t>(lo)]) lo = static_cast<long>(i);
            if (hi < 0 || y[i] > y[static_cast<size_t>(hi)]) hi = static_cast<long>(i);
        }
        if (lo >= 0) {
            keep.push_back(std::min(lo, hi));
            if (hi != lo) keep.push_back(std::max(lo, hi));
        }
        if (gap) keep.push_back(-1);
    }
    return keep;
}

std::string render_chart(const Chart& c) {
    // The domain: every finite point.
    double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo,
           y_hi = -x_lo;
    for (const Series& s : c.series)
        for (size_t i = 0; i < s.y.size(); ++i) {
            if (!finite(s.x[i]) || !finite(s.y[i])) continue;
            x_lo = std::min(x_lo, s.x[i]);
            x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]);
            y_hi = std::max(y_hi, s.y[i]);
        }
    const bool empty = !finite(x_lo);
    Frame f;
    f.plot_w = kWidth - kLeft - kRight;
    f.plot_h = kPlotHeight;
    f.top = 30 + legend_height(c.legend, f.plot_w) + 8;
    f.x = empty ? nice_axis(0, 1, 6, c.x_integer) : nice_axis(x_lo, x_hi, 6, c.x_integer);
    f.y = empty ? nice_axis(0, 1, 5) : nice_axis(y_lo, y_hi, 5);
    const double height = f.top + f.plot_h + kBottom;

    std::string o;
    o += "<svg class=\"chart\" id=\"" + escape_html(c.id) + "\" viewBox=\"0 0 " + px(kWidth) +
         " " + px(height) + "\" width=\"" + px(kWidth) + "\" height=\"" + px(height) +
         "\" role=\"img\" aria-label=\"" + escape_html(c.title) + "\" data-x0=\"" +
         fmt("%.17g", f.x.lo) + "\" data-x1=\"" + fmt("%.17g", f.x.hi) + "\" data-y0=\"" +
         fmt("%.17g", f.y.lo) + "\" data-y1=\"" + fmt("%.17g", f.y.hi) + "\" data-left=\"" +
         px(kLeft) + "\" data-top=\"" + px(f.top) + "\" data-pw=\"" + px(f.plot_w) +
         "\" data-ph=\"" + px(f.plot_h) + "\" data-xlabel=\"" + escape_html(c.x_label) +
         "\">\n";
    o += "<text class=\"title\" x=\"" + px(kLeft) + "\" y=\"18\">" + escape_html(c.title) +
         "</text>\n";
    o += render_legend(c.legend, 30 + 12, f.plot_w) + "\n";

    // Grid, ticks and labels.
    o += "<g class=\"grid\">";
    for (double t : f.y.ticks)
        o += "<line x1=\"" + px(kLeft) + "\" x2=\"" + px(kLeft + f.plot_w) + "\" y1=\"" +
             px(f.map_y(t)) + "\" y2=\"" + px(f.map_y(t)) + "\"/>";
    for (double t : f.x.ticks)
        o += "<line y1=\"" + px(f.top) + "\" y2=\"" + px(f.top + f.plot_h) + "\" x1=\"" +
             px(f.map_x(t)) + "\" x2=\"" + px(f.map_x(t)) + "\"/>";
    o += "</g>\n<g class=\"axis\">";
    o += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(f.top) + "\" width=\"" + px(f.plot_w) +
         "\" height=\"" + px(f.plot_h) + "\" fill=\"none\"/>";
    for (double t : f.y.ticks)
        o += "<text class=\"ytick\" x=\"" + px(kLeft - 6) + "\" y=\"" + px(f.map_y(t) + 4) +
             "\">" + escape_html(tick_label(t, f.y)) + "</text>";
    for (double t : f.x.ticks)
        o += "<text class=\"xtick\" x=\"" + px(f.map_x(t)) + "\" y=\"" +
             px(f.top + f.plot_h + 16) + "\">" + escape_html(tick_label(t, f.x)) + "</text>";
    o += "<text class=\"xlabel\" x=\"" + px(kLeft + f.plot_w / 2) + "\" y=\"" +
         px(f.top + f.plot_h + 34) + "\">" + escape_html(c.x_label) + "</text>";
    o += "<text class=\"ylabel\" transform=\"translate(14 " + px(f.top + f.plot_h / 2) +
         ") rotate(-90)\">" + escape_html(c.y_label) + "</text>";
    o += "</g>\n";

    if (empty) {
        o += "<text class=\"note\" x=\"" + px(kLeft + f.plot_w / 2) + "\" y=\"" +
             px(f.top + f.plot_h / 2) + "\">" + escape_html(c.empty_note) + "</text>\n";
    }

    // The series: faint ones first, so the others draw over them.
    for (int pass = 0; pass < 2 && !empty; ++pass) {
        for (const Series& s : c.series) {
            if ((s.style == Series::Faint) != (pass == 0)) continue;
            size_t finite_points = 0;
            for (size_t i = 0; i < s.y.size(); ++i)
                finite_points += finite(s.x[i]) && finite(s.y[i]);
            std::vector<double> y = s.y;  // a gap where x is not finite either
            for (size_t i = 0; i < y.size(); ++i)
                if (!finite(s.x[i])) y[i] = std::numeric_limits<double>::quiet_NaN();
            const std::vector<long> keep = downsample(y, kMaxBuckets);
            std::string d, dots;
            size_t drawn = 0, in_segment = 0;
            double last_x = 0, last_y = 0;
            const bool faint = s.style == Series::Faint;
            auto close_segment = [&] {
                // A lone point (between gaps, or a run of one step): a zero-length line for
                // the path (the read-out finds it there), and a dot to see it by.
                if (in_segment == 1) {
                    d += " L" + px(last_x + 0.1) + "," + px(last_y);
                    if (!faint)
                        dots += "<circle cx=\"" + px(last_x) + "\" cy=\"" + px(last_y) +
                                "\" r=\"2.5\"/>";
                }
                in_segment = 0;
            };
            for (long i : keep) {
                if (i < 0 || !finite(y[static_cast<size_t>(i)])) {
                    close_segment();
                    continue;
                }
                const size_t k = static_cast<size_t>(i);
                last_x = f.map_x(s.x[k]);
                last_y = f.map_y(y[k]);
                d += (in_segment == 0 ? (d.empty() ? "M" : " M") : " ") + px(last_x) + "," +
                     px(last_y);
                ++in_segment;
                ++drawn;
            }
            close_segment();
            o += "<path class=\"series\" d=\"" + d + "\" fill=\"none\" stroke=\"" + s.color +
                 "\" stroke-width=\"" + (faint ? "1" : "2") + "\"" +
                 (faint ? " stroke-opacity=\"0.3\"" : "") + dash_of(s.style) +
                 " stroke-linecap=\"round\" stroke-linejoin=\"round\" data-series=\"" +
                 escape_html(s.name) + "\" data-run=\"" + escape_html(s.run) + "\" data-n=\"" +
                 std::to_string(finite_points) + "\" data-drawn=\"" + std::to_string(drawn) +
                 "\"/>\n";
            if (!dots.empty())
                o += "<g class=\"dots\" fill=\"" + s.color + "\">" + dots + "</g>\n";
            if (s.markers && finite_points <= 60) {
                o += "<g class=\"markers\" fill=\"" + s.color + "\">";
                for (size_t i = 0; i < s.y.size(); ++i) {
                    if (!finite(s.x[i]) || !finite(s.y[i])) continue;
                    o += "<circle cx=\"" + px(f.map_x(s.x[i])) + "\" cy=\"" +
                         px(f.map_y(s.y[i])) + "\" r=\"3\"><title>" +
                         escape_html(s.run.empty() ? s.name : s.run + " " + s.name) + " " +
                         fmt("%.5g", s.y[i]) + " at " + escape_html(c.x_label) + " " +
                         fmt("%.6g", s.x[i]) + "</title></circle>";
                }
                o += "</g>\n";
            }
        }
    }
    o += "<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"" + px(f.top) + "\" y2=\"" +
         px(f.top + f.plot_h) + "\" visibility=\"hidden\"/>\n";
    o += "</svg>";
    return o;
}

}  // namespace trainrt_cli

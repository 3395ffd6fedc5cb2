// `trainrt report`'s charts: one inline SVG per chart (no script needed to see it), lines
// with gaps where a value is missing or not finite, axes with nice ticks, a legend, and
// long series reduced to at most ~2 x kMaxBuckets points keeping each bucket's min and max
// (so spikes survive).
#pragma once
#include <string>
#include <vector>

namespace trainrt_cli {

constexpr size_t kMaxBuckets = 2000;

struct Series {
    enum Style { Solid, Faint, Dashed };
    std::string name;   // the tooltip's and data-series' name ("train loss (EMA)")
    std::string run;    // the run's label
    std::string color;  // CSS colour
    Style style = Solid;
    bool markers = false;     // a circle at every point (evals), when there are few
    std::vector<double> x, y;  // same length; a non-finite y is a gap
};

struct LegendItem {
    std::string text, color;
    Series::Style style = Series::Solid;
    bool marker = false;
};

struct Chart {
    std::string id, title, x_label, y_label;
    std::vector<Series> series;
    std::vector<LegendItem> legend;
    std::string empty_note;  // drawn when no series has a finite point
    bool x_integer = true;   // the x axis counts steps: whole ticks, at least 2 wide
};

// The chart as one <svg> element (HTML5 inline: no namespace, no external reference).
std::string render_chart(const Chart& chart);

// HTML/XML text and attribute escaping: & < > " ', and printable(s, true) (report_data.h).
std::string escape_html(const std::string& s);

// Tick positions for [lo, hi] (about `target` of them, at 1, 2 or 5 x 10^k) and the
// domain they span (lo and hi widened to ticks); exposed for tests of the axis logic.
struct Axis {
    double lo = 0, hi = 1, step = 1;
    std::vector<double> ticks;
};
Axis nice_axis(double lo, double hi, int target, bool integer = false);
// A tick's label on an axis with that step ("0.25", "20k", "3e-4").
std::string tick_label(double v, const Axis& axis);

// Indices of the points kept when drawing n points: all of them up to 2 x buckets, else per
// bucket of consecutive points the lowest and the highest finite y (in order), and -1 where
// a bucket holds a gap.
std::vector<long> downsample(const std::vector<double>& y, size_t buckets);

}  // namespace trainrt_cli

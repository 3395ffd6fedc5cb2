// `trainrt report`'s page: one self-contained HTML file (inline CSS, inline SVG charts, a
// little inline script for hover read-outs that the charts do not need; no network, fonts
// or external references) for one or several runs overlaid.
#pragma once
#include <string>
#include <vector>

#include "report_data.h"

namespace trainrt_cli {

// The page's charts, in order: loss vs step, loss vs tokens, learning rate, gradient norm,
// tokens/s, MFU.
constexpr int kReportCharts = 6;

std::string render_report(const std::vector<RunData>& runs);

// The colour of run i on the page and in the charts.
const char* run_color(size_t i);

}  // namespace trainrt_cli

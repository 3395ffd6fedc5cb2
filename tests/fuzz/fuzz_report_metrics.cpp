// fuzz_report_metrics: `trainrt report`'s reader of a run's metrics.jsonl
// (tools/trainrt/report_data.h, read_metrics_from) — a file from a run folder someone else
// wrote — then what the report makes of it: the summary's figures, every kept string through
// printable() (what the terminal shows: no control character may come out, and the text
// stays valid UTF-8), and the whole HTML page (render_report).
//
// Input: the metrics.jsonl bytes. The report code links only the public C API; of it, this
// target calls nothing that reads a checkpoint (read_run_config is not fed), and the calls
// the page makes (the version line) are stubbed below, so no library module is linked.
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <trainrt/trainrt.h>

#include "fuzz_util.h"
#include "report_data.h"
#include "report_html.h"

// The C API the report sources reference (report_data.cpp's read_run_config, which this
// target never calls, and the page's version line).
extern "C" {
const char* trainrt_version_string(void) { return "fuzz"; }
const char* trainrt_last_error_message(void) { return "not linked in fuzz_report_metrics"; }
trainrt_status trainrt_checkpoint_latest(char*, size_t, size_t*, const char*) {
    return TRAINRT_ERR_IO;
}
trainrt_status trainrt_config_from_checkpoint(trainrt_config**, const char*) {
    return TRAINRT_ERR_IO;
}
void trainrt_config_destroy(trainrt_config*) {}
trainrt_status trainrt_config_dump(char*, size_t, size_t*, const trainrt_config*) {
    return TRAINRT_ERR_IO;
}
trainrt_status trainrt_config_get_double(double*, const trainrt_config*, const char*) {
    return TRAINRT_ERR_IO;
}
trainrt_status trainrt_config_get_int(int64_t*, const trainrt_config*, const char*) {
    return TRAINRT_ERR_IO;
}
trainrt_status trainrt_config_get_string(char*, size_t, size_t*, const trainrt_config*,
                                         const char*) {
    return TRAINRT_ERR_IO;
}
trainrt_status trainrt_config_model_info(trainrt_model_info*, const trainrt_config*) {
    return TRAINRT_ERR_IO;
}
}

namespace {

// What printable() promises: no C0 control, DEL, C1 control, line or paragraph separator or
// bidi override, and valid UTF-8 (keep_lines: newline and tab may stay).
void check_printable(const std::string& in, bool keep_lines) {
    const std::string s = trainrt_cli::printable(in, keep_lines);
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c < 0x20 && !(keep_lines && (c == '\n' || c == '\t'))) || c == 0x7f)
            fuzz::die("printable() left control byte " + std::to_string(c));
    }
    // Valid UTF-8 and none of the unsafe code points: printable() of it changes nothing.
    if (trainrt_cli::printable(s, keep_lines) != s)
        fuzz::die("printable() is not idempotent (its output still holds something unsafe)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    trainrt_cli::RunData base;
    base.dir = "fuzz";
    base.label = "fuzz";
    base.metrics_path = "fuzz/metrics.jsonl";
    std::vector<trainrt_cli::RunData> runs;
    std::string error;
    if (!trainrt_cli::read_metrics_from(base, in, runs, error)) {
        check_printable(error, false);
        return 0;
    }
    if (runs.empty()) fuzz::die("read_metrics_from succeeded without a run");
    for (trainrt_cli::RunData& run : runs) {
        if (run.train.empty()) fuzz::die("read_metrics_from kept a run without a train line");
        for (size_t i = 1; i < run.train.size(); ++i)
            if (run.train[i].step <= run.train[i - 1].step) fuzz::die("train steps not increasing");
        const trainrt_cli::RunSummary s = trainrt_cli::summarize(run);
        (void)trainrt_cli::short_count(s.tokens);
        (void)trainrt_cli::short_duration(s.train_seconds);
        check_printable(run.run_id, false);
        for (const trainrt_cli::RunHeader& h : run.headers)
            for (const std::string* t : {&h.run, &h.time, &h.version, &h.acceleration, &h.model})
                check_printable(*t, false);
        for (const std::string& why : run.malformed_why) check_printable(why, false);
        run.config_error = "not read by fuzz_report_metrics";
    }
    const std::string page = trainrt_cli::render_report(runs);
    check_printable(page, true);
    return 0;
}

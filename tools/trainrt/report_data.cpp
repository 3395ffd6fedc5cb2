// `trainrt report`: reading a run folder (report_data.h). Public C API only.
#include "report_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include <trainrt/trainrt.h>

#include "report_json.h"

namespace trainrt_cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool finite(double x) { return std::isfinite(x); }

// A finite number that is a whole step, 0 .. 2^53.
bool as_step(double v, int64_t& out) {
    if (!finite(v) || v < 0 || v > 9007199254740992.0 || v != std::floor(v)) return false;
    out = static_cast<int64_t>(v);
    return true;
}

// A (buf, cap, needed) string of the C API; false leaves the reason in
// trainrt_last_error_message().
template <typename Fn>
bool api_string(std::string& out, Fn&& call) {
    size_t needed = 0;
    if (call(nullptr, 0, &needed) != TRAINRT_OK) return false;
    std::string text(needed + 1, '\0');
    if (call(&text[0], text.size(), &needed) != TRAINRT_OK) return false;
    text.resize(needed);
    out = text;
    return true;
}

std::string config_string(const trainrt_config* c, const char* key) {
    std::string v;
    if (!api_string(v, [&](char* b, size_t n, size_t* need) {
            return trainrt_config_get_string(b, n, need, c, key);
        }))
        return "";
    return v;
}

int64_t config_int(const trainrt_config* c, const char* key) {
    int64_t v = 0;
    return trainrt_config_get_int(&v, c, key) == TRAINRT_OK ? v : 0;
}

double config_double(const trainrt_config* c, const char* key) {
    double v = 0;
    return trainrt_config_get_double(&v, c, key) == TRAINRT_OK ? v : 0;
}

std::string g3(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

// The smoothed loss: an exponential moving average over the logged steps, its window
// growing with the run (about 1/40 of the points, 1 to 100), debiased so the first points
// are not pulled towards 0. Non-finite losses are skipped (and stay gaps).
void ema_loss(RunData& run) {
    const double n = static_cast<double>(run.train.size());
    run.ema_window = std::min(100.0, std::max(1.0, std::floor(n / 40)));
    const double beta = 1.0 - 1.0 / run.ema_window;
    double avg = 0, weight = 0;
    for (TrainPoint& p : run.train) {
        if (!finite(p.loss)) {
            p.loss_ema = kNaN;
            continue;
        }
        avg = beta * avg + (1 - beta) * p.loss;
        weight = beta * weight + (1 - beta);
        p.loss_ema = avg / weight;
    }
}

// A val line's tokens: the train line of its step, else interpolated between the nearest
// logged steps (tokens grow linearly in steps), else scaled from the nearest one.
void val_tokens(RunData& run) {
    for (ValPoint& v : run.val) {
        v.tokens_total = kNaN;
        const auto after = std::lower_bound(
            run.train.begin(), run.train.end(), v.step,
            [](const TrainPoint& p, int64_t s) { return p.step < s; });
        const TrainPoint* hi = after != run.train.end() ? &*after : nullptr;
        const TrainPoint* lo = after != run.train.begin() ? &*(after - 1) : nullptr;
        if (hi && hi->step == v.step) {
            v.tokens_total = hi->tokens_total;
        } else if (lo && hi && finite(lo->tokens_total) && finite(hi->tokens_total)) {
            const double f = static_cast<double>(v.step - lo->step) /
                             static_cast<double>(hi->step - lo->step);
            v.tokens_total = lo->tokens_total + f * (hi->tokens_total - lo->tokens_total);
        } else if (const TrainPoint* near = hi ? hi : lo;
                   near && near->step > 0 && finite(near->tokens_total)) {
            v.tokens_total = near->tokens_total * static_cast<double>(v.step) /
                             static_cast<double>(near->step);
        }
    }
}

// The length of the UTF-8 sequence at s[i] and its code point; 0 when it is none.
size_t utf8_at(const std::string& s, size_t i, uint32_t& cp) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    const size_t left = s.size() - i;
    if (c < 0x80) return cp = c, 1;
    const size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                     : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || left < n) return 0;
    cp = c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (b(i + k) & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

}  // namespace

std::string printable(const std::string& s, bool keep_lines) {
    std::string out;
    out.reserve(s.size());
    char buf[16];
    for (size_t i = 0; i < s.size();) {
        uint32_t cp = 0;
        const size_t n = utf8_at(s, i, cp);
        if (n == 0) {  // not UTF-8: the byte
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
            out += buf;
            ++i;
            continue;
        }
        const bool line = keep_lines && (cp == '\n' || cp == '\t');
        const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
        const bool unsafe = cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                            (cp >= 0x2066 && cp <= 0x2069);
        if ((control && !line) || unsafe) {
            if (cp < 0x80) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
            else std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
            out += buf;
        } else {
            out.append(s, i, n);
        }
        i += n;
    }
    return out;
}

bool read_metrics(const RunData& base, std::vector<RunData>& runs, std::string& error) {
    struct stat st {};
    if (::stat(base.dir.c_str(), &st) != 0) {
        error = "no folder '" + base.dir + "': give a run's train.out_dir (the folder " +
                "`trainrt train` writes metrics.jsonl and checkpoints into)";
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        error = "'" + base.dir + "' is not a folder: give a run's train.out_dir (the folder " +
                "holding metrics.jsonl)";
        return false;
    }
    RunData with_path = base;
    with_path.metrics_path = base.dir + "/metrics.jsonl";
    std::ifstream file(with_path.metrics_path, std::ios::binary);
    if (!file) {
        error = "no " + with_path.metrics_path + " (" +
                (::stat(with_path.metrics_path.c_str(), &st) == 0 ? "unreadable" : "missing") +
                "): is '" + base.dir + "' a run's train.out_dir? `trainrt train CONFIG` with " +
                "train.out_dir set writes it as it trains";
        return false;
    }
    return read_metrics_from(with_path, file, runs, error);
}

namespace {

// One run of the file as it is read: its steps by number. A run header at step S (a resume
// from S's checkpoint) moves the lines of later steps aside: the continued run's line for
// such a step replaces it; those it never reaches again are dropped (a branch the run left).
struct RunReader {
    RunData run;
    std::map<int64_t, TrainPoint> train, orphan_train;
    std::map<int64_t, ValPoint> val, orphan_val;
    int64_t last_train_step = -1;
    bool pending_resume = false;  // a header resumed: counted at the next train line

    bool has_steps() const { return !train.empty() || !val.empty() || !orphan_train.empty(); }
    void orphan_after(int64_t s) {  // moves the lines of steps > s aside
        for (auto it = train.upper_bound(s); it != train.end(); it = train.erase(it))
            orphan_train[it->first] = it->second;
        for (auto it = val.upper_bound(s); it != val.end(); it = val.erase(it))
            orphan_val[it->first] = it->second;
    }
};

// Moves the skipped lines of a run left out (no train line) into a neighbour `to` (before
// it: append; after it: prepend), so every malformed line is still reported once.
void fold_skipped(RunData& to, const RunData& from, bool append) {
    auto& lines = to.malformed_lines;
    auto& why = to.malformed_why;
    lines.insert(append ? lines.end() : lines.begin(), from.malformed_lines.begin(),
                 from.malformed_lines.end());
    why.insert(append ? why.end() : why.begin(), from.malformed_why.begin(),
               from.malformed_why.end());
    to.ignored += from.ignored;
}

}  // namespace

bool read_metrics_from(const RunData& base, std::istream& file, std::vector<RunData>& runs,
                       std::string& error) {
    // Runs in the order they began (a deque: `cur` stays valid as runs are added).
    std::deque<RunReader> readers(1);
    readers[0].run = base;
    RunReader* cur = &readers[0];
    std::map<std::string, RunReader*> by_id;
    auto begin_run = [&](const std::string& id) {
        if (cur->has_steps() || !cur->run.headers.empty() || !cur->run.run_id.empty()) {
            readers.emplace_back();
            readers.back().run = base;
            cur = &readers.back();
        }
        cur->run.run_id = id;
        if (!id.empty()) by_id[id] = cur;
    };
    auto malformed = [&](int64_t line, const std::string& why) {
        cur->run.malformed_lines.push_back(line);
        cur->run.malformed_why.push_back(why);
    };

    std::string text;
    JsonObject o;
    std::string why;
    int64_t n = 0, n_malformed = 0;
    while (std::getline(file, text)) {
        ++n;
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.find_first_not_of(" \t") == std::string::npos) continue;  // blank
        if (!parse_flat_object(text, o, why)) {
            malformed(n, "not a JSON object: " + why), ++n_malformed;
            continue;
        }
        const std::string split = string_or(o, "split", "");
        int64_t step = 0;
        const bool has_step = as_step(number_or_nan(o, "step"), step);
        if (split != "train" && split != "val" && split != "run") {
            if (split.empty()) malformed(n, "no \"split\""), ++n_malformed;
            else ++cur->run.ignored;
            continue;
        }
        if (!has_step) {
            malformed(n, "a " + split + " line without a whole, non-negative \"step\""),
                ++n_malformed;
            continue;
        }
        if (split == "run") {
            RunHeader h;
            h.step = step;
            h.run = string_or(o, "run", "");
            int64_t from = 0;
            if (as_step(number_or_nan(o, "resumed_from"), from)) h.resumed_from = from;
            h.time = string_or(o, "time", "");
            h.version = string_or(o, "version", "");
            h.acceleration = string_or(o, "acceleration", "");
            h.model = string_or(o, "model", "");
            h.line = n;
            bool resume = false;  // continues the run `cur` then is
            if (!h.run.empty()) {
                const auto known = by_id.find(h.run);
                if (known != by_id.end()) {
                    cur = known->second;
                    resume = true;
                } else if (h.resumed_from >= 0 && cur->run.run_id.empty() && cur->has_steps()) {
                    // A resume from a checkpoint of an older writer (which records no run):
                    // the run before it, begun by that writer, is the one it continues.
                    cur->run.run_id = h.run;
                    by_id[h.run] = cur;
                    resume = true;
                } else {
                    begin_run(h.run);  // a fresh start (or a checkpoint of another folder's)
                    resume = h.resumed_from >= 0;
                }
            } else if (step > 0) {
                resume = true;  // an older writer's resume: of the run in progress
            } else if (cur->has_steps()) {
                begin_run("");  // an older writer's fresh start over earlier steps
            }
            cur->run.headers.push_back(h);
            cur->orphan_after(step);
            cur->last_train_step = step;
            cur->pending_resume = resume;
            continue;
        }
        RunReader& r = *cur;
        if (split == "val") {
            ValPoint v;
            v.step = step;
            v.loss = number_or_nan(o, "loss");
            v.line = n;
            if (r.val.count(step) != 0 || r.orphan_val.erase(step) != 0) ++r.run.replaced;
            r.val[step] = v;
            continue;
        }
        // A train line.
        if (!r.pending_resume && step <= r.last_train_step) {
            // A log without run headers (an older writer) going back: a resume from a
            // checkpoint before this step.
            r.orphan_after(step - 1);
            ++r.run.resumes;
        } else if (r.pending_resume) {
            ++r.run.resumes;
        }
        r.pending_resume = false;
        r.last_train_step = step;
        TrainPoint p;
        p.step = step;
        p.loss = number_or_nan(o, "loss");
        p.lr = number_or_nan(o, "lr");
        p.grad_norm = number_or_nan(o, "grad_norm");
        p.tokens_total = number_or_nan(o, "tokens_total");
        p.ms = number_or_nan(o, "ms");
        p.tok_per_s = number_or_nan(o, "tok_per_s");
        p.mfu = number_or_nan(o, "mfu");
        if (o.count("mfu") != 0) r.run.mfu_logged = true;
        p.line = n;
        for (double* x : {&p.loss, &p.lr, &p.grad_norm, &p.tokens_total, &p.ms, &p.tok_per_s,
                          &p.mfu})
            if (!finite(*x)) *x = kNaN;
        if (r.train.count(step) != 0 || r.orphan_train.erase(step) != 0) ++r.run.replaced;
        r.train[step] = p;
    }
    if (file.bad()) {
        error = "cannot read " + base.metrics_path;
        return false;
    }
    runs.clear();
    std::vector<const RunData*> left_out;  // no train line: skipped lines go to a neighbour
    for (RunReader& r : readers) {
        RunData& run = r.run;
        run.lines = n;
        run.dropped = static_cast<int64_t>(r.orphan_train.size() + r.orphan_val.size());
        for (const auto& [s, p] : r.train) run.train.push_back(p);
        for (const auto& [s, v] : r.val) run.val.push_back(v);
        if (run.train.empty()) {
            if (!runs.empty()) fold_skipped(runs.back(), run, true);
            else left_out.push_back(&run);
            continue;
        }
        for (auto it = left_out.rbegin(); it != left_out.rend(); ++it)
            fold_skipped(run, **it, false);
        left_out.clear();
        runs.push_back(std::move(run));
    }
    if (runs.empty()) {
        error = base.metrics_path + " holds no training step (" + std::to_string(n) +
                " lines, " + std::to_string(n_malformed) +
                " of them malformed, no {\"split\": \"train\"} line): train the run first " +
                "(`trainrt train CONFIG`), or name the folder of one that has trained";
        return false;
    }
    for (size_t i = 0; i < runs.size(); ++i) {
        RunData& run = runs[i];
        run.index = static_cast<int>(i + 1);
        run.runs_in_file = static_cast<int>(runs.size());
        if (runs.size() > 1) run.label = base.label + " run " + std::to_string(i + 1);
        ema_loss(run);
        val_tokens(run);
    }
    return true;
}

namespace {

// The run config of run.dir's latest checkpoint, for `run`.
void read_checkpoint_config(RunData& run) {
    std::string latest;
    if (!api_string(latest, [&](char* b, size_t n, size_t* need) {
            return trainrt_checkpoint_latest(b, n, need, run.dir.c_str());
        })) {
        run.config_error = std::string("reading ") + run.dir + "/latest: " +
                           trainrt_last_error_message();
        return;
    }
    if (latest.empty()) {
        run.config_error = "no checkpoint in " + run.dir + " (no `latest` file): the run " +
                           "config is unknown";
        return;
    }
    run.checkpoint = latest;
    trainrt_config* c = nullptr;
    if (trainrt_config_from_checkpoint(&c, latest.c_str()) != TRAINRT_OK) {
        run.config_error = "reading the config of " + latest + ": " +
                           trainrt_last_error_message();
        return;
    }
    if (!api_string(run.config_toml, [&](char* b, size_t n, size_t* need) {
            return trainrt_config_dump(b, n, need, c);
        }))
        run.config_error = std::string("dumping the config: ") + trainrt_last_error_message();

    // Key facts.
    trainrt_model_info m = TRAINRT_MODEL_INFO_INIT;
    const bool have_info = trainrt_config_model_info(&m, c) == TRAINRT_OK;
    const auto count = [&](const char* key, const char* noun) {
        const int64_t n = config_int(c, key);
        return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
    };
    std::string model = config_string(c, "model.arch") + ", " + count("model.n_layer", "layer") +
                        ", " + count("model.n_head", "head") + ", d_model " +
                        std::to_string(config_int(c, "model.d_model")) + ", context " +
                        std::to_string(config_int(c, "model.context_length")) + ", vocab " +
                        std::to_string(config_int(c, "model.vocab_size"));
    if (have_info) {
        model += "; " + short_count(static_cast<double>(m.parameters)) + " parameters";
        if (m.trainable_parameters != m.parameters)
            model += " (" + short_count(static_cast<double>(m.trainable_parameters)) +
                     " trainable)";
    }
    if (const int64_t r = config_int(c, "lora.rank"); r > 0)
        model += "; LoRA rank " + std::to_string(r);
    if (const std::string from = config_string(c, "model.init_from"); !from.empty())
        model += "; from " + from;
    run.facts.emplace_back("model", model);
    const int64_t B = config_int(c, "train.batch_size"), T = config_int(c, "train.seq_len"),
                  GA = config_int(c, "train.grad_accum");
    run.facts.emplace_back(
        "batch", B > 0 ? std::to_string(GA) + " x " + std::to_string(B) + " x " +
                             std::to_string(T) + " = " + std::to_string(GA * B * T) +
                             " tokens per step (grad_accum x batch_size x seq_len)"
                       : "batch_size auto x " + std::to_string(T) + " x " +
                             std::to_string(GA));
    run.facts.emplace_back(
        "optimizer", "AdamW lr " + g3(config_double(c, "optim.lr")) + ", " +
                         config_string(c, "optim.schedule") + " schedule, warmup " +
                         std::to_string(config_int(c, "optim.warmup_steps")) + ", min_lr " +
                         g3(config_double(c, "optim.min_lr")) + ", " +
                         std::to_string(config_int(c, "train.steps")) + " steps");
    run.facts.emplace_back("runtime", "device " + config_string(c, "runtime.device") +
                                          ", precision " +
                                          config_string(c, "runtime.precision"));
    run.facts.emplace_back("data", config_string(c, "data.train"));
    run.facts.emplace_back("checkpoint", latest);

    // MFU from runtime.peak_tflops when the lines carry none (one device's peak).
    const double peak = config_double(c, "runtime.peak_tflops");
    if (!run.mfu_logged && peak > 0 && have_info && m.flops_per_token > 0) {
        for (TrainPoint& p : run.train)
            p.mfu = p.tok_per_s * m.flops_per_token / (peak * 1e12);
        run.mfu_computed = true;
    }
    trainrt_config_destroy(c);
}

// The run a checkpoint belongs to: state.json's "run" (FORMATS.md §4), "" when it names none.
std::string checkpoint_run(const std::string& checkpoint) {
    std::ifstream f(checkpoint + "/state.json", std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    JsonObject o;
    std::string why;
    return parse_flat_object(text, o, why) ? string_or(o, "run", "") : "";
}

}  // namespace

void read_run_config(std::vector<RunData>& runs) {
    if (runs.empty()) return;
    RunData* owner = &runs.back();
    std::string latest;
    if (runs.size() > 1 &&
        api_string(latest, [&](char* b, size_t n, size_t* need) {
            return trainrt_checkpoint_latest(b, n, need, runs[0].dir.c_str());
        }) &&
        !latest.empty()) {
        const std::string id = checkpoint_run(latest);
        for (RunData& r : runs)
            if (!id.empty() && r.run_id == id) owner = &r;
    }
    read_checkpoint_config(*owner);
    for (RunData& r : runs)
        if (&r != owner)
            r.config_error = owner->checkpoint.empty()
                                 ? owner->config_error
                                 : "not kept for this run: the folder's latest checkpoint (" +
                                       owner->checkpoint + ") is " + owner->label + "'s";
}

RunSummary summarize(const RunData& run) {
    RunSummary s;
    s.last_loss_ema = s.best_loss_ema = s.last_val = s.best_val = s.tok_per_s = s.mfu = kNaN;
    if (run.train.empty()) return s;
    s.steps = run.train.back().step;
    s.tokens = run.train.back().tokens_total;
    int64_t prev = 0;
    for (const TrainPoint& p : run.train) {
        if (finite(p.loss_ema)) {
            s.last_loss_ema = p.loss_ema;
            if (!(p.loss_ema >= s.best_loss_ema)) {
                s.best_loss_ema = p.loss_ema;
                s.best_loss_step = p.step;
            }
        }
        if (finite(p.ms)) s.train_seconds += p.ms / 1000.0 * static_cast<double>(p.step - prev);
        prev = p.step;
    }
    for (const ValPoint& v : run.val) {
        if (!finite(v.loss)) continue;
        s.last_val = v.loss;
        if (!(v.loss >= s.best_val)) {
            s.best_val = v.loss;
            s.best_val_step = v.step;
        }
    }
    // The tail: the last fifth of the logged steps (at least one).
    const size_t n = run.train.size(), tail = std::max<size_t>(1, n / 5);
    s.tail_from = run.train[n - tail].step;
    double tps = 0, mfu = 0;
    int n_tps = 0, n_mfu = 0;
    for (size_t i = n - tail; i < n; ++i) {
        if (finite(run.train[i].tok_per_s)) tps += run.train[i].tok_per_s, ++n_tps;
        if (finite(run.train[i].mfu)) mfu += run.train[i].mfu, ++n_mfu;
    }
    if (n_tps > 0) s.tok_per_s = tps / n_tps;
    if (n_mfu > 0) s.mfu = mfu / n_mfu;
    return s;
}

std::string short_count(double v) {
    if (!finite(v)) return "-";
    const double a = std::fabs(v);
    char buf[32];
    if (a < 1000) {
        std::snprintf(buf, sizeof buf, a == std::floor(a) ? "%.0f" : "%.3g", v);
        return buf;
    }
    const char* suffix[] = {"k", "M", "G", "T", "P"};
    int i = 0;
    double x = v / 1000;
    while (std::fabs(x) >= 1000 && i < 4) x /= 1000, ++i;
    std::snprintf(buf, sizeof buf, "%.3g%s", x, suffix[i]);
    return buf;
}

std::string short_duration(double seconds) {
    if (!finite(seconds) || seconds < 0) return "-";
    char buf[32];
    if (seconds < 10) {
        std::snprintf(buf, sizeof buf, "%.2fs", seconds);
        return buf;
    }
    if (seconds > 1e12) {  // from a malformed line: beyond what a long counts
        std::snprintf(buf, sizeof buf, "%.3gs", seconds);
        return buf;
    }
    const long s = static_cast<long>(seconds + 0.5);
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

}  // namespace trainrt_cli

// Session::step_examples (issue 40): targets that do not count (-1), the loss and gradient a
// mean over the counted targets of the whole step. Checked: every target counting is
// step_tokens bit for bit; the loss is the mean of the counted positions' cross-entropy;
// grad_accum and the world size do not change a step (micro-batches and ranks with unequal
// counts); a step with nothing counted is refused with the session unchanged; bad targets and
// positions are refused naming where.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.h"
#include "runtime/session.h"

using namespace trt;

namespace {

constexpr int kV = 17, kT = 6;

Config tiny_config(int64_t batch, int64_t grad_accum) {
    Config c = Config::from_string(
        "[model]\nvocab_size = 17\ncontext_length = 8\nn_layer = 2\nn_head = 2\nd_model = 8\n"
        "[train]\nseq_len = 6\nsteps = 10\n[optim]\nlr = 0.01\nwarmup_steps = 2\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("train.batch_size", std::to_string(batch));
    c.set("train.grad_accum", std::to_string(grad_accum));
    return c;
}

// rows of T+1 ids (step_tokens' layout), and the same as inputs / targets [rows, T] with the
// targets where mask is 0 ignored.
struct Examples {
    std::vector<int32_t> tokens, inputs, targets;
    int64_t counted = 0;
};

Examples examples(int rows, int seed, const std::vector<uint8_t>& mask = {}) {
    std::mt19937 rng(seed);
    Examples e;
    e.tokens.resize(static_cast<size_t>(rows) * (kT + 1));
    for (auto& x : e.tokens) x = static_cast<int32_t>(rng() % kV);
    for (int r = 0; r < rows; ++r)
        for (int t = 0; t < kT; ++t) {
            const size_t i = static_cast<size_t>(r) * kT + t;
            const bool counts = mask.empty() || mask[i] != 0;
            e.inputs.push_back(e.tokens[static_cast<size_t>(r) * (kT + 1) + t]);
            e.targets.push_back(counts ? e.tokens[static_cast<size_t>(r) * (kT + 1) + t + 1]
                                       : kIgnoredTarget);
            e.counted += counts ? 1 : 0;
        }
    return e;
}

// A mask whose micro-batches of `rows_per_micro` rows count very different numbers of
// targets (a per-micro-batch mean would weigh them wrongly).
std::vector<uint8_t> uneven_mask(int rows, int seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> m(static_cast<size_t>(rows) * kT);
    for (size_t i = 0; i < m.size(); ++i) {
        const bool first_half = i < m.size() / 2;
        m[i] = first_half ? (i % kT == kT - 1) : (rng() % 4 != 0);  // 1 per row, then ~3/4
    }
    return m;
}

std::vector<float> params(Session& s) {
    std::vector<float> p(s.param_table().num_params());
    s.read_params(nullptr, p.data(), p.size());
    return p;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / den);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <typename F>
Status status_of(F&& f, std::string* what = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (what) *what = e.what();
        return e.status();
    }
    return Status::Ok;
}

}  // namespace

TEST(StepExamples, EveryTargetCountingIsStepTokensBitForBit) {
    Session a(tiny_config(2, 2), LogSink{});
    Session b(tiny_config(2, 2), LogSink{});
    for (int s = 0; s < 3; ++s) {
        const Examples e = examples(4, 100 + s);
        const StepResult ra = a.step_tokens(e.tokens.data(), e.tokens.size());
        const StepResult rb = b.step_examples(e.inputs.data(), e.targets.data(), nullptr,
                                              e.inputs.size());
        EXPECT_TRUE(same_bits(ra.loss, rb.loss)) << ra.loss << " vs " << rb.loss;
        EXPECT_TRUE(same_bits(ra.grad_norm, rb.grad_norm));
        EXPECT_EQ(ra.tokens, rb.tokens);
        EXPECT_EQ(ra.tokens_total, rb.tokens_total);
    }
    const std::vector<float> pa = params(a), pb = params(b);
    EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)));
}

// The step's loss is the mean cross-entropy of the counted positions (from the logits of a
// forward on the same weights), not the mean over every position.
TEST(StepExamples, TheLossIsTheMeanOverTheCountedTargets) {
    Session s(tiny_config(3, 1), LogSink{});
    const Examples e = examples(3, 7, uneven_mask(3, 8));
    ASSERT_GT(e.counted, 0);
    ASSERT_LT(e.counted, 3 * kT);
    std::vector<float> logits(static_cast<size_t>(3) * kT * kV);
    s.forward(e.tokens.data(), 3, kT, logits.data(), logits.size());
    double sum = 0;
    for (size_t i = 0; i < e.targets.size(); ++i) {
        if (e.targets[i] == kIgnoredTarget) continue;
        const float* x = &logits[i * kV];
        double mx = x[0], z = 0;
        for (int v = 1; v < kV; ++v) mx = std::max(mx, double(x[v]));
        for (int v = 0; v < kV; ++v) z += std::exp(x[v] - mx);
        sum += mx + std::log(z) - x[e.targets[i]];
    }
    const StepResult r =
        s.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
    EXPECT_NEAR(r.loss, sum / double(e.counted), 1e-6 * r.loss);
    EXPECT_EQ(r.tokens, 3 * kT);  // tokens processed, counted or not
}

// 2 micro-batches of 2 rows == 1 micro-batch of 4 rows holding the same rows, with the
// micro-batches counting 2 and ~9 targets: one mean over the step, so the same loss and
// weights (up to the order of float sums).
TEST(StepExamples, GradAccumDoesNotChangeAMaskedStep) {
    Session accum(tiny_config(2, 2), LogSink{});
    Session whole(tiny_config(4, 1), LogSink{});
    for (int s = 0; s < 3; ++s) {
        const Examples e = examples(4, 20 + s, uneven_mask(4, 30 + s));
        const StepResult a =
            accum.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
        const StepResult b =
            whole.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
        EXPECT_NEAR(a.loss, b.loss, 1e-6 * b.loss) << "step " << s + 1;
        EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * b.grad_norm) << "step " << s + 1;
    }
    EXPECT_LE(max_rel_diff(params(accum), params(whole)), 1e-6);
}

// A micro-batch with nothing counted is as if it were not there: grad_accum 2 whose second
// micro-batch is all ignored equals grad_accum 1 on the first, loss and gradient norm (a
// dloss over every processed token would halve the norm; AdamW alone would hide that).
TEST(StepExamples, AnIgnoredMicroBatchIsNoMicroBatch) {
    Session two(tiny_config(2, 2), LogSink{});
    Session one(tiny_config(2, 1), LogSink{});
    for (int s = 0; s < 2; ++s) {
        std::vector<uint8_t> mask = uneven_mask(4, 60 + s);
        for (size_t i = 2 * kT; i < mask.size(); ++i) mask[i] = 0;
        const Examples e = examples(4, 70 + s, mask);
        const StepResult a =
            two.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
        const StepResult b =
            one.step_examples(e.inputs.data(), e.targets.data(), nullptr, 2 * kT);
        EXPECT_NEAR(a.loss, b.loss, 1e-6 * b.loss) << "step " << s + 1;
        EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-6 * b.grad_norm) << "step " << s + 1;
    }
    EXPECT_LE(max_rel_diff(params(two), params(one)), 1e-6);
}

// A row whose targets are all ignored adds nothing to the loss or the gradient: changing its
// inputs (rows never see each other) leaves the steps bit for bit the same.
TEST(StepExamples, AFullyIgnoredRowChangesNothing) {
    std::vector<uint8_t> mask = uneven_mask(2, 5);
    for (int t = 0; t < kT; ++t) mask[kT + t] = 0;  // row 1: nothing counts
    Examples e = examples(2, 11, mask);
    Examples f = e;
    for (int t = 0; t < kT; ++t) f.inputs[kT + t] = (f.inputs[kT + t] + 5) % kV;
    Session a(tiny_config(2, 1), LogSink{});
    Session b(tiny_config(2, 1), LogSink{});
    for (int s = 0; s < 2; ++s) {
        const StepResult ra =
            a.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
        const StepResult rb =
            b.step_examples(f.inputs.data(), f.targets.data(), nullptr, f.inputs.size());
        EXPECT_TRUE(same_bits(ra.loss, rb.loss));
        EXPECT_TRUE(same_bits(ra.grad_norm, rb.grad_norm));
    }
    const std::vector<float> pa = params(a), pb = params(b);
    EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)));
}

TEST(StepExamples, AStepWithNothingCountedIsRefusedAndChangesNothing) {
    Session s(tiny_config(2, 2), LogSink{});
    const Examples good = examples(4, 3);
    s.step_examples(good.inputs.data(), good.targets.data(), nullptr, good.inputs.size());
    const std::vector<float> before = params(s);
    const Examples none = examples(4, 4, std::vector<uint8_t>(4 * kT, 0));
    std::string what;
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] {
                  s.step_examples(none.inputs.data(), none.targets.data(), nullptr,
                                  none.inputs.size());
              }, &what));
    EXPECT_NE(what.find("every target of this step is ignored"), std::string::npos) << what;
    EXPECT_EQ(s.metrics().step, 1);
    const std::vector<float> after = params(s);
    EXPECT_EQ(0, std::memcmp(before.data(), after.data(), before.size() * sizeof(float)));
}

TEST(StepExamples, BadArgumentsAreRefusedNamingWhere) {
    Session s(tiny_config(2, 2), LogSink{});
    Examples e = examples(4, 9);
    const size_t n = e.inputs.size();
    std::string what;
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] { s.step_examples(e.inputs.data(), e.targets.data(), nullptr, n - 1); },
                        &what));
    EXPECT_NE(what.find("expected train.grad_accum x batch_size x seq_len"), std::string::npos);
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] { s.step_examples(nullptr, e.targets.data(), nullptr, n); }));
    for (int32_t bad : {-2, kV}) {
        Examples b = e;
        b.targets[kT * 3 + 2] = bad;  // micro-batch 1, row 1, column 2
        EXPECT_EQ(Status::InvalidArgument,
                  status_of([&] { s.step_examples(b.inputs.data(), b.targets.data(), nullptr, n); },
                            &what));
        EXPECT_NE(what.find("micro-batch 1, row 1, column 2"), std::string::npos) << what;
    }
    Examples b = e;
    b.inputs[0] = -1;  // inputs are never ignored
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] { s.step_examples(b.inputs.data(), b.targets.data(), nullptr, n); }));

    std::vector<int32_t> pos(n);
    for (size_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(i % kT);
    std::vector<int32_t> p = pos;
    p[kT * 2] = 1;  // micro-batch 1, row 0 starts at 1
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] { s.step_examples(e.inputs.data(), e.targets.data(), p.data(), n); },
                        &what));
    EXPECT_NE(what.find("micro-batch 1, row 0, column 0"), std::string::npos) << what;
    p = pos;
    p[kT + 3] = 5;  // micro-batch 0, row 1: 0 1 2 5: neither 0 nor 2 + 1
    EXPECT_EQ(Status::InvalidArgument,
              status_of([&] { s.step_examples(e.inputs.data(), e.targets.data(), p.data(), n); },
                        &what));
    EXPECT_NE(what.find("micro-batch 0, row 1, column 3"), std::string::npos) << what;
    EXPECT_EQ(s.metrics().step, 0);  // nothing ran

    // 0 .. T-1 in every row is what NULL means: the same step.
    Session plain(tiny_config(2, 2), LogSink{});
    const StepResult ra = s.step_examples(e.inputs.data(), e.targets.data(), pos.data(), n);
    const StepResult rb = plain.step_examples(e.inputs.data(), e.targets.data(), nullptr, n);
    EXPECT_TRUE(same_bits(ra.loss, rb.loss));
}

// Data parallel on the thread world: 2 ranks of 2 rows, counting 2 and ~9 targets, train as
// one rank of 4 rows (the count is summed over the ranks before the first micro-batch).
TEST(StepExamples, TwoRanksWithUnequalCountsTrainAsOne) {
    const int steps = 2;
    std::vector<Examples> batches;
    for (int s = 0; s < steps; ++s) batches.push_back(examples(4, 40 + s, uneven_mask(4, 50 + s)));
    Session one(tiny_config(4, 1), LogSink{});
    std::vector<double> want, want_norms;
    for (const Examples& e : batches) {
        const StepResult r =
            one.step_examples(e.inputs.data(), e.targets.data(), nullptr, e.inputs.size());
        want.push_back(r.loss);
        want_norms.push_back(r.grad_norm);
    }
    const std::vector<float> want_params = params(one);

    auto world = dist::make_thread_world(2);
    std::vector<std::vector<double>> losses(2), norms(2);
    std::vector<std::vector<float>> got_params(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(tiny_config(2, 1), LogSink{}, {}, world[static_cast<size_t>(r)]);
                const size_t half = 2 * kT;  // this rank's rows: r*2 .. r*2 + 1
                for (const Examples& e : batches) {
                    const StepResult res = s.step_examples(
                        e.inputs.data() + r * half, e.targets.data() + r * half, nullptr, half);
                    losses[r].push_back(res.loss);
                    norms[r].push_back(res.grad_norm);
                }
                got_params[r] = params(s);
            } catch (const std::exception& e) {
                errors[r] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(errors[r], "") << "rank " << r;
        for (int s = 0; s < steps; ++s) {
            EXPECT_NEAR(losses[r][s], want[s], 1e-6 * want[s]) << "rank " << r << " step " << s;
            EXPECT_NEAR(norms[r][s], want_norms[s], 1e-5 * want_norms[s])
                << "rank " << r << " step " << s;
        }
        EXPECT_LE(max_rel_diff(got_params[r], want_params), 1e-6) << "rank " << r;
    }
}

// The bf16 mode's row ops in blocks (cpu_lowp.cpp, by_row_blocks: cache-sized blocks of rows
// over the threads, each widened, run by the fp32 kernel on its own thread, rounded back; the
// norms' backward with their parameter gradients summed per 128-row block, as the fp32 kernels
// group them) must give exactly round(fp32 op on the widened inputs): bit for bit in the bf16
// outputs (incl. the += of dinp) and in the fp32 statistics and parameter gradients (+=),
// whatever the block size (rows not a multiple of it; one row wider than a block) and thread
// count. An offset the block loop gets wrong (a slot's scratch, a block's first row, its
// statistics, its partial sums) fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/bf16.h"
#include "cpu/reference_ops.h"

namespace {

using trt::DType;

// The ops' calls: in (bf16 inputs), fin (fp32 inputs), out (bf16 outputs), st (fp32 outputs).
using Call = std::function<void(trt::Backend&, DType, const std::vector<void*>&,
                                const std::vector<float*>&, const std::vector<void*>&,
                                const std::vector<float*>&, const float*, const float*)>;
using Sizes = std::vector<size_t>;

// One op's tensors: bf16 activations (inputs and outputs) and fp32 side outputs, by name.
struct OpRun {
    std::string name;
    std::vector<size_t> act_in;   // sizes of the bf16 inputs
    std::vector<size_t> f32_in;   // sizes of the fp32 inputs (saved statistics)
    std::vector<size_t> act_out;  // sizes of the bf16 outputs (or += accumulators)
    std::vector<size_t> f32_out;  // sizes of the fp32 outputs (statistics, or += gradients)
    Call call;                    // the op on `be`, activations as Act/ConstAct of the dtype
};

struct Outputs {
    std::vector<std::vector<uint16_t>> acts;
    std::vector<std::vector<float>> stats;
};

// Runs `op` on `be` (bf16 activations when lowp, else fp32 ones widened from the same bf16
// values, the outputs rounded afterwards).
// Every output starts from the same values (acts: as bf16; fp32 ones as given): the +=
// accumulators add to them, the others overwrite them.
Outputs run_op(trt::Backend& be, bool lowp, const OpRun& op,
               const std::vector<std::vector<uint16_t>>& inputs,
               const std::vector<std::vector<float>>& f32_inputs, const Outputs& start,
               const std::vector<float>& w, const std::vector<float>& b) {
    const size_t es = lowp ? 2 : 4;
    const DType dtype = lowp ? DType::BF16 : DType::F32;
    std::vector<void*> in, out;
    std::vector<float*> stats;
    auto upload = [&](const std::vector<uint16_t>& x) {
        void* d = be.alloc(x.size() * es, "act");
        if (lowp) {
            be.copy_to_device(d, x.data(), x.size() * 2);
        } else {
            std::vector<float> f(x.size());
            for (size_t i = 0; i < x.size(); i++) f[i] = trt::bf16_to_float(x[i]);
            be.copy_to_device(d, f.data(), f.size() * 4);
        }
        return d;
    };
    for (const auto& x : inputs) in.push_back(upload(x));
    std::vector<float*> fin;
    for (const auto& x : f32_inputs) {
        fin.push_back(static_cast<float*>(be.alloc(x.size() * 4, "fp32 in")));
        be.copy_to_device(fin.back(), x.data(), x.size() * 4);
    }
    for (const auto& x : start.acts) out.push_back(upload(x));
    for (const auto& x : start.stats) {
        stats.push_back(static_cast<float*>(be.alloc(x.size() * 4, "stat")));
        be.copy_to_device(stats.back(), x.data(), x.size() * 4);
    }
    auto* wd = static_cast<float*>(be.alloc(w.size() * 4, "w"));
    auto* bd = static_cast<float*>(be.alloc(b.size() * 4, "b"));
    be.copy_to_device(wd, w.data(), w.size() * 4);
    be.copy_to_device(bd, b.data(), b.size() * 4);
    op.call(be, dtype, in, fin, out, stats, wd, bd);
    Outputs r;
    for (size_t i = 0; i < out.size(); i++) {
        std::vector<uint16_t> h(op.act_out[i]);
        if (lowp) {
            be.copy_to_host(h.data(), out[i], h.size() * 2);
        } else {
            std::vector<float> f(h.size());
            be.copy_to_host(f.data(), out[i], f.size() * 4);
            for (size_t j = 0; j < f.size(); j++) h[j] = trt::float_to_bf16(f[j]);
        }
        r.acts.push_back(h);
    }
    for (size_t i = 0; i < stats.size(); i++) {
        std::vector<float> h(op.f32_out[i]);
        be.copy_to_host(h.data(), stats[i], h.size() * 4);
        r.stats.push_back(h);
    }
    for (void* p : in) be.free(p);
    for (float* p : fin) be.free(p);
    for (void* p : out) be.free(p);
    for (float* p : stats) be.free(p);
    be.free(wd);
    be.free(bd);
    return r;
}

std::vector<OpRun> ops(int N, int C, int F) {
    const size_t NC = (size_t)N * C, NF = (size_t)N * F, n = (size_t)N, c = (size_t)C;
    std::vector<OpRun> v;
    auto add = [&](const char* name, Sizes act_in, Sizes f32_in, Sizes act_out, Sizes f32_out,
                   Call call) {
        OpRun op;
        op.name = name;
        op.act_in = std::move(act_in);
        op.f32_in = std::move(f32_in);
        op.act_out = std::move(act_out);
        op.f32_out = std::move(f32_out);
        op.call = std::move(call);
        v.push_back(std::move(op));
    };
    using A = trt::Act;
    using CA = trt::ConstAct;
    add("layernorm_forward", {NC}, {}, {NC}, {n, n},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto& st,
            const float* w, const float* b) {
            be.layernorm_forward(A(out[0], t), st[0], st[1], CA(in[0], t), w, b, N, C);
        });
    add("residual_layernorm_forward", {NC, NC}, {}, {NC, NC}, {n, n},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto& st,
            const float* w, const float* b) {
            be.residual_layernorm_forward(A(out[0], t), A(out[1], t), st[0], st[1], CA(in[0], t),
                                          CA(in[1], t), b, w, b, N, C);
        });
    add("layernorm_backward", {NC, NC}, {n, n}, {NC}, {c, c},
        [=](trt::Backend& be, DType t, const auto& in, const auto& fin, const auto& out,
            const auto& st, const float* w, const float*) {
            be.layernorm_backward(A(out[0], t), st[0], st[1], CA(in[0], t), CA(in[1], t), w, fin[0],
                                  fin[1], N, C);
        });
    add("rmsnorm_forward", {NC}, {}, {NC}, {n},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto& st,
            const float* w, const float*) {
            be.rmsnorm_forward(A(out[0], t), st[0], CA(in[0], t), w, N, C, 1e-5f);
        });
    add("residual_rmsnorm_forward", {NC, NC}, {}, {NC, NC}, {n},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto& st,
            const float* w, const float*) {
            be.residual_rmsnorm_forward(A(out[0], t), A(out[1], t), st[0], CA(in[0], t),
                                        CA(in[1], t), w, N, C, 1e-6f);
        });
    add("rmsnorm_backward", {NC, NC}, {n}, {NC}, {c},
        [=](trt::Backend& be, DType t, const auto& in, const auto& fin, const auto& out,
            const auto& st, const float* w, const float*) {
            be.rmsnorm_backward(A(out[0], t), st[0], CA(in[0], t), CA(in[1], t), w, fin[0], N, C);
        });
    add("swiglu_forward", {2 * NF}, {}, {NF}, {},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto&,
            const float*, const float*) { be.swiglu_forward(A(out[0], t), CA(in[0], t), N, F); });
    add("swiglu_backward", {2 * NF, NF}, {}, {2 * NF}, {},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto&,
            const float*,
            const float*) { be.swiglu_backward(A(out[0], t), CA(in[0], t), CA(in[1], t), N, F); });
    add("gelu_forward", {NF}, {}, {NF}, {},
        [=](trt::Backend& be, DType t, const auto& in, const auto&, const auto& out, const auto&,
            const float*, const float*) { be.gelu_forward(A(out[0], t), CA(in[0], t), NF); });
    return v;
}

struct Shape {
    int N, C, F;
};

class CpuLowpRows : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuLowpRows, RowOpsEqualTheFp32OpOnWidenedInputsBitForBit) {
    const Shape sh = GetParam();
    auto fp32 = trt::make_cpu_backend(1, trt::Precision::Fp32);
    for (int threads : {1, 3}) {
        auto bf16 = trt::make_cpu_backend(threads, trt::Precision::Bf16);
        ASSERT_EQ(bf16->activation_dtype(), DType::BF16);
        const std::vector<float> w = ref::random_floats((size_t)sh.C, 5, 0.5f, 1.5f);
        const std::vector<float> b = ref::random_floats((size_t)sh.C, 6, -0.5f, 0.5f);
        uint32_t seed = 10;
        for (const OpRun& op : ops(sh.N, sh.C, sh.F)) {
            SCOPED_TRACE(op.name + " threads " + std::to_string(threads));
            auto random_bf16 = [&](size_t n) {
                std::vector<uint16_t> x(n);
                const std::vector<float> f = ref::random_floats(n, seed++, -3, 3);
                for (size_t i = 0; i < n; i++) x[i] = trt::float_to_bf16(f[i]);
                return x;
            };
            std::vector<std::vector<uint16_t>> inputs;
            for (size_t n : op.act_in) inputs.push_back(random_bf16(n));
            std::vector<std::vector<float>> f32_inputs;  // mean, rstd (positive)
            for (size_t n : op.f32_in)
                f32_inputs.push_back(ref::random_floats(n, seed++, 0.5f, 2.0f));
            Outputs start;
            for (size_t n : op.act_out) start.acts.push_back(random_bf16(n));
            for (size_t n : op.f32_out) start.stats.push_back(ref::random_floats(n, seed++));
            const Outputs want = run_op(*fp32, false, op, inputs, f32_inputs, start, w, b);
            const Outputs got = run_op(*bf16, true, op, inputs, f32_inputs, start, w, b);
            for (size_t i = 0; i < want.acts.size(); i++)
                EXPECT_EQ(got.acts[i], want.acts[i]) << "bf16 output " << i;
            for (size_t i = 0; i < want.stats.size(); i++)
                EXPECT_EQ(got.stats[i], want.stats[i]) << "fp32 statistic " << i;
        }
    }
}

// The memory plan (op_scratch_bytes) covers every row-block loop the ops of its dims run,
// Qwen3's q/k norms (N·NH rows of one head) included, at 16 threads (each thread a block).
TEST(CpuLowpRowsPlan, CoversEveryRowBlockLoop) {
    auto be = trt::make_cpu_backend(16, trt::Precision::Bf16);
    trt::ModelDims d;
    // (Sizes where the q/k norms' backward is the largest loop: 16 heads of 128 over C 1024.)
    d.B = 2, d.T = 64, d.C = 1024, d.NH = 16, d.NKV = 8, d.HS = 128, d.F = 3072, d.V = 64, d.L = 1;
    d.gated_mlp = true;
    const int N = d.B * d.T, C = d.C, F = d.F, rowsH = N * d.NH, hs = d.HS;
    const size_t planned = be->op_scratch_bytes(d);
    const size_t base = be->bytes_in_use();
    std::vector<OpRun> runs = ops(N, C, F);
    // The q/k norms: RMSNorm forward and backward over N·NH rows of hs.
    for (OpRun& op : ops(rowsH, hs, 1))
        if (op.name == "rmsnorm_forward" || op.name == "rmsnorm_backward") {
            op.name += " (q/k norm)";
            runs.push_back(op);
        }
    uint32_t seed = 50;
    for (const OpRun& op : runs) {
        SCOPED_TRACE(op.name);
        std::vector<std::vector<uint16_t>> inputs;
        for (size_t n : op.act_in) inputs.push_back(std::vector<uint16_t>(n, 0x3f80));  // 1.0
        std::vector<std::vector<float>> f32_inputs;
        for (size_t n : op.f32_in) f32_inputs.push_back(std::vector<float>(n, 1.0f));
        Outputs start;
        for (size_t n : op.act_out) start.acts.push_back(std::vector<uint16_t>(n, 0));
        for (size_t n : op.f32_out) start.stats.push_back(std::vector<float>(n, 0.0f));
        const std::vector<float> w = ref::random_floats(std::max(C, hs), seed++, 0.5f, 1.5f);
        run_op(*be, true, op, inputs, f32_inputs, start, w, w);
        // Everything run_op allocated is freed again; what stays is the ops' scratch.
        EXPECT_LE(be->bytes_in_use() - base, planned)
            << (be->bytes_in_use() - base) << " bytes of scratch, " << planned << " planned";
    }
}

// Rows not a multiple of a block (37 · 5·300 floats: blocks of 21 rows of swiglu_backward);
// rows wider than a block's 32 Ki floats (one row a block).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuLowpRows,
                         ::testing::Values(Shape{333, 200, 300}, Shape{7, 12000, 12000}),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                             return "N" + std::to_string(i.param.N) + "_C" +
                                    std::to_string(i.param.C);
                         });

}  // namespace

namespace {

// The ops that widen whole sequences (unit T: the encoder, RoPE) are in the plan too: at a
// long T with a wide qkv row one sequence is more than any other op's chunk (T·W = 6 Mi
// floats here, above the 4 Mi budget of a chunk and 64 rows of the small vocabulary).
TEST(CpuLowpRowsPlan, CoversTheWholeSequenceOps) {
    auto be = trt::make_cpu_backend(2, trt::Precision::Bf16);
    trt::ModelDims d;
    d.B = 1, d.T = 2048, d.C = 1024, d.NH = 8, d.NKV = 8, d.HS = 128, d.F = 512, d.V = 64;
    d.L = 1, d.gated_mlp = true;
    const int T = d.T, C = d.C, hs = d.HS, W = (d.NH + 2 * d.NKV) * hs;
    const size_t planned = be->op_scratch_bytes(d);
    const size_t base = be->bytes_in_use();
    auto* out = static_cast<uint16_t*>(be->alloc(size_t(T) * W * 2));
    auto* ids = static_cast<int32_t*>(be->alloc(size_t(T) * 4));
    auto* wte = static_cast<float*>(be->alloc(size_t(d.V) * C * 4));
    auto* table = static_cast<float*>(be->alloc(size_t(T) * hs / 2 * 4));
    be->zero(out, size_t(T) * W * 2);
    be->zero(ids, size_t(T) * 4);
    be->zero(wte, size_t(d.V) * C * 4);
    be->zero(table, size_t(T) * hs / 2 * 4);
    const size_t buffers = be->bytes_in_use() - base;
    be->encoder_forward(trt::Act(out, trt::DType::BF16), ids, wte, nullptr, 1, T, C);
    EXPECT_LE(be->bytes_in_use() - base - buffers, planned) << "encoder_forward";
    const trt::AttentionShape a = trt::AttentionShape::from_heads(1, T, d.NH, d.NKV, hs);
    be->rope_forward(trt::Act(out, trt::DType::BF16), table, table, 0, a);
    EXPECT_LE(be->bytes_in_use() - base - buffers, planned)
        << "rope_forward: " << (be->bytes_in_use() - base - buffers) << " bytes of scratch, "
        << planned << " planned";
    for (void* p : {(void*)out, (void*)ids, (void*)wte, (void*)table}) be->free(p);
}

}  // namespace

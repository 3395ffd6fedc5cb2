// The op-case table (op_cases.h). Shapes are multiples of nothing (vector tails, partial
// blocks), include the degenerate ones (N = 1, T = 1, C = 3), the column chunks of the
// reductions (> 256 columns), attention's query blocks (T > 64), and the model's own widths
// (GPT-2 small's 768/3072, vocabulary padding 50257 -> 50304). Each op's reference is the
// double one of reference_ops.h, proven there against finite differences.
#include "ops/op_cases.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"

#include "cpu/reference_ops.h"

namespace opcase {

const Tolerance kFp32Math{1e-5, 1e-5, 1e-5};
const Tolerance kMatmulForward{1e-5, 2e-3, 1e-2};
const Tolerance kMatmulBackward{1e-5, 2e-3, 2e-2};

TensorRef::operator float*() const {
    TRT_CHECK(dtype == trt::DType::F32, "op case: a bf16 activation passed as float*");
    return static_cast<float*>(p);
}

std::string OpCase::name() const {
    std::string n = op + "_" + shape;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

namespace {

using trt::Backend;
using trt::WeightLayout;

// ---------------------------------------------------------------- building blocks

TensorSpec tensor(std::string name, size_t count, Use use, float lo = -1.0f, float hi = 1.0f) {
    TensorSpec t;
    t.name = std::move(name);
    t.count = count;
    t.use = use;
    t.lo = lo;
    t.hi = hi;
    return t;
}
TensorSpec in(std::string name, size_t count, float lo = -1.0f, float hi = 1.0f) {
    return tensor(std::move(name), count, Use::In, lo, hi);
}
TensorSpec out(std::string name, size_t count) { return tensor(std::move(name), count, Use::Out); }
TensorSpec acc(std::string name, size_t count) { return tensor(std::move(name), count, Use::Accum); }
TensorSpec ids(std::string name, size_t count, int32_t below) {
    TensorSpec t = tensor(std::move(name), count, Use::In);
    t.ids_below = below;
    return t;
}
TensorSpec operand(TensorSpec t) {
    t.operand = true;
    return t;
}
TensorSpec param(TensorSpec t) {  // a weight the backend reads through its working copy
    t.operand = true;
    t.param = true;
    return t;
}
TensorSpec bitwise(TensorSpec t) {
    t.bitwise = true;
    return t;
}

// Documents (backend.h): each row packs examples of the lengths `lens`, cycled (row b starts
// at lens[b % size], so rows differ; the last example is cut at T): pos[b,t] restarts at 0
// where an example begins.
std::vector<int32_t> doc_positions(int B, int T, const std::vector<int>& lens) {
    std::vector<int32_t> p((size_t)B * T);
    for (int b = 0; b < B; b++) {
        size_t k = (size_t)b % lens.size();
        int left = lens[k], run = 0;
        for (int t = 0; t < T; t++) {
            if (left == 0) {
                k = (k + 1) % lens.size();
                left = lens[k];
                run = 0;
            }
            p[(size_t)b * T + t] = run++;
            left--;
        }
    }
    return p;
}
TensorSpec positions(int B, int T, const std::vector<int>& lens) {
    TensorSpec t = ids("pos", (size_t)B * T, std::max(T, 1));
    t.fill_ids = [=](std::vector<int32_t>& v) { v = doc_positions(B, T, lens); };
    return t;
}
std::string docs_text(const std::vector<int>& lens) {
    std::string s = " docs";
    for (int n : lens) s += "_" + std::to_string(n);
    return s;
}

// Dims a backend reserves for N rows of width C (norms, elementwise, column sums).
trt::ModelDims rows_dims(int N, int C) {
    trt::ModelDims d;
    d.B = 1;
    d.T = N;
    d.C = C;
    d.NH = 1;
    d.V = 1;
    d.L = 1;
    return d;
}
// n elements of an elementwise op, as rows of 64: rows_dims(1, n) would claim a model of width
// n, whose weight-shaped scratch (C x 4C) runs to hundreds of GiB at n = 100003.
trt::ModelDims elementwise_dims(size_t n) {
    return rows_dims(static_cast<int>((n + 63) / 64), 64);
}
// A product [N,K]·[K,M]: C >= max(K, M) covers every scratch shape derived from C, 3C, 4C.
trt::ModelDims matmul_dims(int N, int K, int M) {
    trt::ModelDims d = rows_dims(N, std::max(K, M));
    d.V = M;
    return d;
}
trt::ModelDims attention_dims(int B, int T, int C, int NH, int NKV) {
    trt::ModelDims d = rows_dims(T, C);
    d.B = B;
    d.NH = NH;
    d.NKV = NKV;
    return d;
}

std::string dims_text(std::initializer_list<std::pair<const char*, long>> dims) {
    std::string s;
    for (auto [k, v] : dims) s += (s.empty() ? "" : " ") + std::string(k) + std::to_string(v);
    return s;
}

const char* layout_name(WeightLayout l) { return l == WeightLayout::InOut ? "InOut" : "OutIn"; }

// A forward output a backward case allocates itself (floats, which is room for any
// activation dtype), as the activation view the backend takes.
trt::Act as_act(Backend& be, float* buffer) { return trt::Act(buffer, be.activation_dtype()); }

// Expected value of an accumulator: pre-fill + increment, in place.
void add_into(Vec& acc_pre, const Vec& inc) {
    for (size_t i = 0; i < acc_pre.size() && i < inc.size(); i++) acc_pre[i] += inc[i];
}

std::vector<OpCase> cases;

// The tensors each op takes as activation views (Act / ConstAct in backend.h), by the names
// the cases give them.
const std::map<std::string, std::set<std::string>>& activation_tensors() {
    static const std::map<std::string, std::set<std::string>> m = {
        {"encoder_forward", {"out"}},
        {"encoder_backward", {"dout"}},
        {"layernorm_forward", {"inp", "out"}},
        {"layernorm_backward", {"inp", "dout", "dinp"}},
        {"residual_layernorm_forward", {"a", "b", "res_out", "out"}},
        {"matmul_forward", {"inp", "out"}},
        {"matmul_backward", {"inp", "dout", "dinp"}},
        {"matmul_gelu_forward", {"inp", "pre", "out"}},
        {"qmatmul_forward", {"inp", "out"}},
        {"qmatmul_backward", {"dout", "dinp"}},
        {"qencoder_forward", {"out"}},
        {"gelu_backward_bias", {"inp", "dout", "dinp"}},
        {"attention_forward", {"qkv", "out"}},
        {"attention_backward", {"qkv", "dout", "dqkv"}},
        {"attention_cached_forward", {"qkv", "out"}},
        {"classifier_forward_backward", {"logits"}},
        {"rmsnorm_forward", {"inp", "out"}},
        {"rmsnorm_backward", {"inp", "dout", "dinp"}},
        {"residual_rmsnorm_forward", {"a", "b", "res_out", "out"}},
        {"qk_norm_forward", {"qkv", "pre"}},
        {"rope_forward", {"qkv"}},
        {"rope_backward", {"dqkv"}},
        {"swiglu_forward", {"inp", "out"}},
        {"swiglu_backward", {"inp", "dout", "dinp"}},
        {"add_columns", {"out", "in"}},
        {"copy_columns", {"out", "in"}},
        {"gelu_forward", {"inp", "out"}},
        {"dropout", {"in", "out"}},
    };
    return m;
}

void add(OpCase c) {
    const auto it = activation_tensors().find(c.op);
    TRT_CHECK(it != activation_tensors().end(), "op case: no activation list for ", c.op);
    for (TensorSpec& t : c.tensors) t.act = it->second.count(t.name) > 0;
    cases.push_back(std::move(c));
}

// ---------------------------------------------------------------- encoder

void encoder_cases() {
    struct S {
        int B, T, C, V;
        bool wpe;
        bool wte = true;  // false: a frozen token embedding (dwte null; backward only)
    };
    for (S s : {S{2, 7, 12, 5, true}, S{3, 17, 40, 67, true}, S{2, 5, 3, 2, true},
                S{4, 64, 768, 50, true}, S{1, 1, 8, 3, true}, S{2, 7, 13, 5, false},
                S{3, 17, 40, 67, false}, S{2, 7, 12, 5, true, false},
                S{4, 64, 768, 50, true, false}}) {
        const int B = s.B, T = s.T, C = s.C, V = s.V, P = T + 3;  // wpe has rows past T
        const bool wpe = s.wpe, wte = s.wte;
        const std::string sh = dims_text({{"B", B}, {"T", T}, {"C", C}, {"V", V}}) +
                               (wpe ? "" : " no_wpe") + (wte ? "" : " frozen_wte");
        const size_t N = (size_t)B * T;
        if (wte) {
            OpCase c;
            c.op = "encoder_forward";
            c.shape = sh;
            // One add per element: the same bits on every backend.
            c.tensors = {ids("inputs", N, V), in("wte", (size_t)V * C), in("wpe", (size_t)P * C),
                         bitwise(out("out", N * C))};
            c.dims = rows_dims(T, C);
            c.dims.B = B;
            c.dims.V = V;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.encoder_forward(t.f(3), t.ids(0), t.f(1), t.f_if(wpe, 2), B, T, C);
            };
            c.reference = [=](HostTensors& h) {
                h.f[3] = ref::encoder_forward(h.ids[0], h.f[1], wpe ? h.f[2] : Vec{}, B, T, C);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "encoder_backward";
            c.shape = sh;
            c.tensors = {ids("inputs", N, V), in("dout", N * C), acc("dwte", (size_t)V * C),
                         acc("dwpe", (size_t)P * C)};
            c.dims = rows_dims(T, C);
            c.dims.B = B;
            c.dims.V = V;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.encoder_backward(t.f_if(wte, 2), t.f_if(wpe, 3), t.f(1), t.ids(0), B, T, C);
            };
            c.reference = [=](HostTensors& h) {
                Vec dwte, dwpe;
                ref::encoder_backward(h.f[1], h.ids[0], B, T, C, V, dwte, dwpe);
                if (wte) add_into(h.f[2], dwte);  // frozen: keeps its pre-fill
                if (wpe) add_into(h.f[3], dwpe);  // rows >= T keep their pre-fill
            };
            add(c);
        }
    }
}

// Documents: each row's wpe rows are its examples' positions (pos, the last tensor).
void encoder_document_cases() {
    struct S {
        int B, T, C, V;
        std::vector<int> lens;
        bool wte = true;  // false: a frozen token embedding (backward only)
    };
    for (const S& s : {S{2, 17, 40, 67, {5, 1, 11}}, S{3, 70, 12, 9, {64, 1, 5}},
                       S{1, 9, 8, 3, {9}}, S{4, 64, 768, 50, {7, 30, 1, 26}},
                       S{2, 17, 40, 67, {5, 1, 11}, false}}) {
        const int B = s.B, T = s.T, C = s.C, V = s.V, P = T + 3;
        const bool wte = s.wte;
        const std::vector<int> lens = s.lens;
        const std::string sh = dims_text({{"B", B}, {"T", T}, {"C", C}, {"V", V}}) +
                               docs_text(lens) + (wte ? "" : " frozen_wte");
        const size_t N = (size_t)B * T;
        if (wte) {
            OpCase c;
            c.op = "encoder_forward";
            c.shape = sh;
            c.tensors = {ids("inputs", N, V), in("wte", (size_t)V * C), in("wpe", (size_t)P * C),
                         bitwise(out("out", N * C)), positions(B, T, lens)};
            c.dims = rows_dims(T, C);
            c.dims.B = B;
            c.dims.V = V;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.encoder_forward(t.f(3), t.ids(0), t.f(1), t.f(2), B, T, C, t.ids(4));
            };
            c.reference = [=](HostTensors& h) {
                h.f[3] = ref::encoder_forward(h.ids[0], h.f[1], h.f[2], B, T, C, &h.ids[4]);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "encoder_backward";
            c.shape = sh;
            c.tensors = {ids("inputs", N, V), in("dout", N * C), acc("dwte", (size_t)V * C),
                         acc("dwpe", (size_t)P * C), positions(B, T, lens)};
            c.dims = rows_dims(T, C);
            c.dims.B = B;
            c.dims.V = V;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.encoder_backward(t.f_if(wte, 2), t.f(3), t.f(1), t.ids(0), B, T, C, t.ids(4));
            };
            c.reference = [=](HostTensors& h) {
                Vec dwte, dwpe;
                ref::encoder_backward(h.f[1], h.ids[0], B, T, C, V, dwte, dwpe, &h.ids[4]);
                if (wte) add_into(h.f[2], dwte);
                add_into(h.f[3], dwpe);
            };
            add(c);
        }
    }
}

// ---------------------------------------------------------------- layernorm

void layernorm_cases() {
    for (auto [N, C] : {std::pair{14, 12}, std::pair{51, 40}, std::pair{33, 385},
                        std::pair{1030, 768}, std::pair{7, 1600}, std::pair{5, 3}}) {
        const std::string sh = dims_text({{"N", N}, {"C", C}});
        const size_t NC = (size_t)N * C;
        {
            OpCase c;
            c.op = "layernorm_forward";
            c.shape = sh;
            c.tensors = {in("inp", NC, -2, 3), in("w", C, 0.5f, 1.5f), in("b", C),
                         out("out", NC), out("mean", N), out("rstd", N)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.layernorm_forward(t.f(3), t.f(4), t.f(5), t.f(0), t.f(1), t.f(2), N, C);
            };
            c.reference = [=](HostTensors& h) {
                h.f[3] = ref::layernorm_forward(h.f[0], h.f[1], h.f[2], N, C, &h.f[4], &h.f[5]);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "layernorm_backward";
            c.shape = sh;
            c.tensors = {in("inp", NC, -2, 3), in("w", C, 0.5f, 1.5f), in("b", C),
                         in("dout", NC),       acc("dinp", NC),        acc("dw", C),
                         acc("db", C)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            // The backward reads the mean and rstd its own backend's forward saved, as in a
            // training step.
            c.run = [=](Backend& be, const DeviceTensors& t) {
                auto* o = static_cast<float*>(be.alloc(NC * 4 + 2 * (size_t)N * 4, "ln fwd"));
                float *mean = o + NC, *rstd = mean + N;
                be.layernorm_forward(as_act(be, o), mean, rstd, t.f(0), t.f(1), t.f(2), N, C);
                be.layernorm_backward(t.f(4), t.f(5), t.f(6), t.f(3), t.f(0), t.f(1), mean, rstd,
                                      N, C);
                be.free(o);
            };
            c.reference = [=](HostTensors& h) {
                Vec dinp, dw, db;
                ref::layernorm_backward(h.f[3], h.f[0], h.f[1], N, C, dinp, dw, db);
                add_into(h.f[4], dinp);
                add_into(h.f[5], dw);
                add_into(h.f[6], db);
            };
            add(c);
        }
    }
}

// res = a + b (+ bb), then layernorm of res; expected values in h.f[res], [out], [mean], [rstd].
void residual_layernorm_cases() {
    for (auto [N, C] : {std::pair{1, 1}, std::pair{13, 12}, std::pair{51, 40},
                        std::pair{37, 385}, std::pair{1030, 768}})
        for (bool with_bb : {false, true}) {
            const size_t NC = (size_t)N * C;
            OpCase c;
            c.op = "residual_layernorm_forward";
            c.shape = dims_text({{"N", N}, {"C", C}}) + (with_bb ? " bb" : "");
            c.tensors = {in("a", NC, -2, 2), in("b", NC), in("bb", C),
                         in("w", C, 0.5f, 1.5f), in("bias", C), out("res_out", NC),
                         out("out", NC),      out("mean", N), out("rstd", N)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.residual_layernorm_forward(t.f(5), t.f(6), t.f(7), t.f(8), t.f(0), t.f(1),
                                              t.f_if(with_bb, 2), t.f(3), t.f(4), N, C);
            };
            c.reference = [=](HostTensors& h) {
                Vec res(NC);
                for (size_t i = 0; i < NC; i++)
                    res[i] = h.f[0][i] + h.f[1][i] + (with_bb ? h.f[2][i % C] : 0.0);
                h.f[6] = ref::layernorm_forward(res, h.f[3], h.f[4], N, C, &h.f[7], &h.f[8]);
                h.f[5] = res;
            };
            add(c);
        }
}

// ---------------------------------------------------------------- matmul

struct MatmulShape {
    int N, K, M;
};
const MatmulShape kMatmulShapes[] = {{14, 12, 36},  {51, 40, 120},   {51, 160, 40},
                                     {37, 29, 19},  {130, 67, 201},  {512, 768, 768},
                                     {3, 5, 1}};

void matmul_cases() {
    for (MatmulShape s : kMatmulShapes)
        for (WeightLayout layout : {WeightLayout::InOut, WeightLayout::OutIn})
            for (bool with_bias : {true, false}) {
                const int N = s.N, K = s.K, M = s.M;
                // The model's weights live in the registered buffer; a few cases keep them
                // in plain buffers (a bf16/fp16 backend then casts them per call).
                const bool registered = (N + K + M + (int)with_bias) % 2 == 0;
                const std::string sh = dims_text({{"N", N}, {"K", K}, {"M", M}}) + " " +
                                       layout_name(layout) + (with_bias ? " bias" : "") +
                                       (registered ? " registered" : "");
                auto weight = [&](const char* name, size_t n) {
                    TensorSpec t = in(name, n);
                    return registered ? param(t) : operand(t);
                };
                {
                    OpCase c;
                    c.op = "matmul_forward";
                    c.shape = sh;
                    c.tensors = {operand(in("inp", (size_t)N * K)), weight("weight", (size_t)K * M),
                                 weight("bias", M), out("out", (size_t)N * M)};
                    c.dims = matmul_dims(N, K, M);
                    c.tol = kMatmulForward;
                    c.large = (size_t)N * K * M > 50'000'000;
                    c.run = [=](Backend& be, const DeviceTensors& t) {
                        be.matmul_forward(t.f(3), t.f(0), t.f(1), t.f_if(with_bias, 2), N,
                                          K, M, layout);
                    };
                    c.reference = [=](HostTensors& h) {
                        h.f[3] = ref::matmul_forward(h.f[0], h.f[1], with_bias ? &h.f[2] : nullptr,
                                                     N, K, M, layout);
                    };
                    add(c);
                }
                for (bool with_dinp : {true, false}) {
                    if (!with_dinp && with_bias) continue;  // one no-dinp variant per shape
                    OpCase c;
                    c.op = "matmul_backward";
                    c.shape = sh + (with_dinp ? "" : " no_dinp");
                    c.tensors = {operand(in("inp", (size_t)N * K)),
                                 weight("weight", (size_t)K * M),
                                 operand(in("dout", (size_t)N * M)),
                                 out("dinp", (size_t)N * K),
                                 acc("dweight", (size_t)K * M),
                                 acc("dbias", M)};
                    c.dims = matmul_dims(N, K, M);
                    c.tol = kMatmulBackward;
                    c.large = (size_t)N * K * M > 50'000'000;
                    c.run = [=](Backend& be, const DeviceTensors& t) {
                        be.matmul_backward(t.f_if(with_dinp, 3), t.f(4),
                                           t.f_if(with_bias, 5), t.f(2), t.f(0), t.f(1),
                                           N, K, M, layout);
                    };
                    c.reference = [=](HostTensors& h) {
                        Vec dinp, dw, db;
                        ref::matmul_backward(h.f[2], h.f[0], h.f[1], N, K, M, layout, dinp, dw, db);
                        // Without dinp the buffer keeps its NaN poison: expect exactly that.
                        if (with_dinp) h.f[3] = dinp;
                        add_into(h.f[4], dw);
                        if (with_bias) add_into(h.f[5], db);
                    };
                    if (!with_dinp) c.tensors[3].use = Use::In;  // not written: not compared
                    add(c);
                }
            }
}

// ---------------------------------------------------------------- quantised weights

// lora.base_dtype's formats (core/base_quant.h) as the cases take them.
struct QuantType {
    trt::BaseDType type;
    bool double_quant;
    const char* name;
};
const QuantType kQuantTypes[] = {{trt::BaseDType::Nf4, false, "nf4"},
                                 {trt::BaseDType::Nf4, true, "nf4_dq"},
                                 {trt::BaseDType::Int8, false, "int8"},
                                 {trt::BaseDType::Bf16, false, "bf16"}};

// A case's fp32 weight [sum(rows), cols] quantised as one matrix of tensors `rows` high (a
// fused matmul's parts), as the model's quantised base holds it.
trt::QuantisedMatrix quantise(const float* w, int cols, const std::vector<int>& rows,
                              const QuantType& q) {
    trt::QuantisedMatrix m(q.type, q.double_quant, cols);
    size_t at = 0;
    for (int r : rows) {
        m.append(w + at, r);
        at += (size_t)r * cols;
    }
    return m;
}
trt::QuantisedMatrix quantise(const Vec& w, int cols, const std::vector<int>& rows,
                              const QuantType& q) {
    const std::vector<float> f(w.begin(), w.end());
    return quantise(f.data(), cols, rows, q);
}
// The weight the op should have used, in double.
Vec dequantised(const trt::QuantisedMatrix& m) {
    std::vector<float> f((size_t)m.rows() * m.cols());
    trt::dequantise_tile(m.host_view(), 0, m.rows(), 0, m.cols(), f.data(), (size_t)m.cols());
    return Vec(f.begin(), f.end());
}

// The case's weight tensor (backend memory) quantised, in the backend's memory for one call.
class DeviceQuant {
public:
    DeviceQuant(Backend& be, const TensorRef& weight, int cols, const std::vector<int>& rows,
                const QuantType& q)
        : be_(be) {
        size_t n = 0;
        for (int r : rows) n += (size_t)r * cols;
        std::vector<float> host(n);
        be.copy_to_host(host.data(), static_cast<const float*>(weight), n * sizeof(float));
        const trt::QuantisedMatrix m = quantise(host.data(), cols, rows, q);
        w_ = m.view(upload(m.data()), static_cast<const float*>(upload(m.scales())),
                    static_cast<const uint8_t*>(upload(m.scale_codes())),
                    static_cast<const float*>(upload(m.scales2())));
    }
    ~DeviceQuant() {
        for (void* p : buffers_) be_.free(p);
    }
    DeviceQuant(const DeviceQuant&) = delete;
    DeviceQuant& operator=(const DeviceQuant&) = delete;
    const trt::QuantWeight& weight() const { return w_; }

private:
    template <typename T>
    const void* upload(const std::vector<T>& v) {
        if (v.empty()) return nullptr;
        void* p = be_.alloc(v.size() * sizeof(T), "quantised weight");
        buffers_.push_back(p);
        be_.copy_to_device(p, v.data(), v.size() * sizeof(T));
        return p;
    }
    Backend& be_;
    std::vector<void*> buffers_;
    trt::QuantWeight w_;
};

void qmatmul_cases() {
    struct S {
        int N, K, M;
        std::vector<int> parts;  // the tensors' rows (sum M)
    };
    // Blocks across rows (K % 64 != 0), odd tensor sizes, fused parts, one row (decoding),
    // more tiles than threads, a model-sized product.
    const S shapes[] = {{14, 64, 36, {24, 6, 6}},     {37, 29, 19, {19}},  {1, 64, 40, {40}},
                        {130, 67, 201, {67, 67, 67}}, {51, 160, 40, {40}}, {3, 5, 1, {1}},
                        {512, 768, 768, {768}}};
    int i = 0;
    for (const S& s : shapes)
        for (const QuantType& q : kQuantTypes) {
            const int N = s.N, K = s.K, M = s.M;
            const std::vector<int> parts = s.parts;
            const bool with_bias = (i++ % 2) == 0;
            const std::string sh = dims_text({{"N", N}, {"K", K}, {"M", M}}) + " " + q.name +
                                   (parts.size() > 1 ? " parts" : "") + (with_bias ? " bias" : "");
            const bool large = (size_t)N * K * M > 50'000'000;
            {
                OpCase c;
                c.op = "qmatmul_forward";
                c.shape = sh;
                c.tensors = {operand(in("inp", (size_t)N * K)), in("weight", (size_t)M * K),
                             param(in("bias", M)), out("out", (size_t)N * M)};
                c.dims = matmul_dims(N, K, M);
                c.dims.quantised_base = true;  // the backend sizes the qmatmul scratch
                c.tol = kMatmulForward;
                c.large = large;
                c.run = [=](Backend& be, const DeviceTensors& t) {
                    const DeviceQuant w(be, t.f(1), K, parts, q);
                    be.qmatmul_forward(t.f(3), t.f(0), w.weight(), t.f_if(with_bias, 2), N, K, M);
                };
                c.reference = [=](HostTensors& h) {
                    const Vec W = dequantised(quantise(h.f[1], K, parts, q));
                    h.f[3] = ref::matmul_forward(h.f[0], W, with_bias ? &h.f[2] : nullptr, N, K, M,
                                                 WeightLayout::OutIn);
                };
                add(c);
            }
            for (bool with_dinp : {true, false}) {
                if (!with_dinp && !with_bias) continue;  // dbias alone, where there is a bias
                OpCase c;
                c.op = "qmatmul_backward";
                c.shape = sh + (with_dinp ? "" : " no_dinp");
                c.tensors = {in("weight", (size_t)M * K), operand(in("dout", (size_t)N * M)),
                             out("dinp", (size_t)N * K), acc("dbias", M)};
                c.dims = matmul_dims(N, K, M);
                c.dims.quantised_base = true;  // the backend sizes the qmatmul scratch
                c.tol = kMatmulBackward;
                c.large = large;
                c.run = [=](Backend& be, const DeviceTensors& t) {
                    const DeviceQuant w(be, t.f(0), K, parts, q);
                    be.qmatmul_backward(t.f_if(with_dinp, 2), t.f_if(with_bias, 3), t.f(1),
                                        w.weight(), N, K, M);
                };
                c.reference = [=](HostTensors& h) {
                    const Vec W = dequantised(quantise(h.f[0], K, parts, q));
                    const Vec inp((size_t)N * K, 0.0);
                    Vec dinp, dw, db;
                    ref::matmul_backward(h.f[1], inp, W, N, K, M, WeightLayout::OutIn, dinp, dw,
                                         db);
                    if (with_dinp) h.f[2] = dinp;
                    if (with_bias) add_into(h.f[3], db);
                };
                if (!with_dinp) c.tensors[2].use = Use::In;  // not written: not compared
                add(c);
            }
        }
}

// A quantised token embedding (a frozen wte kept in bf16): its rows dequantised, plus wpe.
void qencoder_cases() {
    struct S {
        int B, T, C, V;
        bool wpe;
    };
    int i = 0;
    for (S s : {S{2, 7, 64, 5, true}, S{3, 17, 40, 67, false}, S{1, 1, 8, 3, true}})
        for (const QuantType& q : kQuantTypes) {
            const int B = s.B, T = s.T, C = s.C, V = s.V, P = T + 3;
            const bool wpe = s.wpe && (i++ % 2 == 0);
            OpCase c;
            c.op = "qencoder_forward";
            c.shape = dims_text({{"B", B}, {"T", T}, {"C", C}, {"V", V}}) + " " + q.name +
                      (wpe ? "" : " no_wpe");
            const size_t N = (size_t)B * T;
            // A dequantised value plus one add: the same bits on every backend.
            c.tensors = {ids("inputs", N, V), in("wte", (size_t)V * C), in("wpe", (size_t)P * C),
                         bitwise(out("out", N * C))};
            c.dims = rows_dims(T, C);
            c.dims.B = B;
            c.dims.V = V;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const DeviceQuant w(be, t.f(1), C, {V}, q);
                be.qencoder_forward(t.f(3), t.ids(0), w.weight(), t.f_if(wpe, 2), B, T, C);
            };
            c.reference = [=](HostTensors& h) {
                const Vec W = dequantised(quantise(h.f[1], C, {V}, q));
                h.f[3] = ref::encoder_forward(h.ids[0], W, wpe ? h.f[2] : Vec{}, B, T, C);
            };
            add(c);
        }
}

void matmul_gelu_cases() {
    for (MatmulShape s : {MatmulShape{51, 40, 160}, MatmulShape{37, 29, 43},
                          MatmulShape{130, 67, 301}, MatmulShape{256, 768, 3072},
                          MatmulShape{1, 3, 5}})
        for (bool with_bias : {false, true}) {
            const int N = s.N, K = s.K, M = s.M;
            const bool registered = with_bias;
            OpCase c;
            c.op = "matmul_gelu_forward";
            c.shape = dims_text({{"N", N}, {"K", K}, {"M", M}}) + (with_bias ? " bias" : "") +
                      (registered ? " registered" : "");
            auto weight = [&](const char* name, size_t n) {
                TensorSpec t = in(name, n);
                return registered ? param(t) : operand(t);
            };
            c.tensors = {operand(in("inp", (size_t)N * K, -2, 2)), weight("weight", (size_t)K * M),
                         weight("bias", M), out("pre", (size_t)N * M), out("out", (size_t)N * M)};
            c.dims = matmul_dims(N, K, M);
            c.tol = kMatmulForward;
            c.large = (size_t)N * K * M > 50'000'000;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.matmul_gelu_forward(t.f(3), t.f(4), t.f(0), t.f(1),
                                       t.f_if(with_bias, 2), N, K, M);
            };
            c.reference = [=](HostTensors& h) {
                h.f[3] = ref::matmul_forward(h.f[0], h.f[1], with_bias ? &h.f[2] : nullptr, N, K,
                                             M, WeightLayout::InOut);
                h.f[4].resize(h.f[3].size());
                for (size_t i = 0; i < h.f[3].size(); i++) h.f[4][i] = ref::gelu(h.f[3][i]);
            };
            add(c);
        }
}

void gelu_backward_bias_cases() {
    for (auto [N, M] : {std::pair{1, 1}, std::pair{67, 13}, std::pair{67, 300},
                        std::pair{2053, 96}, std::pair{29, 1037}})
        for (bool with_dbias : {true, false}) {
            OpCase c;
            c.op = "gelu_backward_bias";
            c.shape = dims_text({{"N", N}, {"M", M}}) + (with_dbias ? "" : " no_dbias");
            const size_t n = (size_t)N * M;
            c.tensors = {in("inp", n, -5, 5), in("dout", n), out("dinp", n), acc("dbias", M)};
            c.dims = rows_dims(N, (M + 3) / 4);  // column sums cover M <= 4C
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.gelu_backward_bias(t.f(2), t.f_if(with_dbias, 3), t.f(0), t.f(1), N, M);
            };
            c.reference = [=](HostTensors& h) {
                h.f[2].resize(n);
                Vec db(M, 0.0);
                for (size_t i = 0; i < n; i++) {
                    h.f[2][i] = ref::gelu_grad(h.f[0][i]) * h.f[1][i];
                    db[i % M] += h.f[2][i];
                }
                if (with_dbias) add_into(h.f[3], db);
            };
            if (!with_dbias) c.tensors[3].use = Use::In;  // untouched: not compared
            add(c);
        }
}

// ---------------------------------------------------------------- attention

// Generation's attention over a KV cache: n new rows at positions pos0.. of one sequence; the
// caches' rows before pos0 (earlier tokens) start random, the rows after stay as they were.
void attention_cached_cases() {
    struct S {
        int pos0, n, NH, NKV, hs, max_T;
    };
    for (S s : {S{0, 1, 2, 2, 4, 4}, S{0, 7, 3, 3, 4, 9}, S{5, 1, 4, 2, 8, 16},
                S{13, 3, 4, 1, 16, 20}, S{100, 1, 12, 12, 64, 128}, S{0, 33, 8, 4, 10, 40},
                S{64, 64, 2, 2, 32, 130}, S{1023, 1, 4, 4, 64, 1024}}) {
        const int pos0 = s.pos0, n = s.n, NH = s.NH, NKV = s.NKV, hs = s.hs, max_T = s.max_T;
        const int C = NH * hs;
        const size_t W = (size_t)(NH + 2 * NKV) * hs, cache = (size_t)NKV * max_T * hs;
        OpCase c;
        c.op = "attention_cached_forward";
        c.shape = dims_text({{"pos0", pos0}, {"n", n}, {"NH", NH}, {"NKV", NKV}, {"hs", hs},
                             {"max_T", max_T}});
        c.tensors = {operand(in("qkv", (size_t)n * W, -2, 2)),
                     operand(tensor("k_cache", cache, Use::InOut, -2, 2)),
                     operand(tensor("v_cache", cache, Use::InOut)), out("out", (size_t)n * C)};
        c.dims = attention_dims(1, n, C, NH, NKV);
        c.tol = kMatmulForward;
        c.run = [=](Backend& be, const DeviceTensors& t) {
            be.attention_cached_forward(t.f(3), t.f(0), t.f(1), t.f(2), pos0, max_T,
                                        trt::AttentionShape::from_heads(1, n, NH, NKV, hs));
        };
        c.reference = [=](HostTensors& h) {
            const Vec& qkv = h.f[0];
            Vec& kc = h.f[1];
            Vec& vc = h.f[2];
            for (int i = 0; i < n; i++)
                for (int g = 0; g < NKV; g++)
                    for (int d = 0; d < hs; d++) {
                        const size_t at = ((size_t)g * max_T + pos0 + i) * hs + d;
                        kc[at] = qkv[(size_t)i * W + C + (size_t)g * hs + d];
                        vc[at] = qkv[(size_t)i * W + C + (size_t)(NKV + g) * hs + d];
                    }
            Vec& o = h.f[3];
            const double scale = 1.0 / std::sqrt((double)hs);
            for (int i = 0; i < n; i++)
                for (int h2 = 0; h2 < NH; h2++) {
                    const int g = h2 / (NH / NKV), t = pos0 + i;
                    std::vector<double> p((size_t)t + 1);
                    double mx = -1e300, sum = 0;
                    for (int k = 0; k <= t; k++) {
                        double dot = 0;
                        for (int d = 0; d < hs; d++)
                            dot += qkv[(size_t)i * W + (size_t)h2 * hs + d] *
                                   kc[((size_t)g * max_T + k) * hs + d];
                        p[k] = dot * scale;
                        mx = std::max(mx, p[k]);
                    }
                    for (double& x : p) sum += (x = std::exp(x - mx));
                    for (int d = 0; d < hs; d++) {
                        double acc = 0;
                        for (int k = 0; k <= t; k++)
                            acc += p[k] * vc[((size_t)g * max_T + k) * hs + d];
                        o[(size_t)i * C + (size_t)h2 * hs + d] = acc / sum;
                    }
                }
        };
        add(c);
    }
}

void attention_cases() {
    struct S {
        int B, T, NH, NKV, hs;
        int window = 0;  // a sliding window (Mistral's), 0: none
    };
    // MHA (GPT-2 and NKV == NH), GQA and MQA; T = 1, T > 64 and not a multiple of 64; sliding
    // windows of 1 key, shorter than a query block, across block edges, and as long as T.
    for (S s : {S{2, 7, 3, 3, 4}, S{1, 1, 2, 2, 4}, S{2, 17, 5, 5, 8}, S{3, 45, 5, 5, 8},
                S{2, 64, 4, 4, 16}, S{1, 130, 2, 2, 48}, S{2, 256, 12, 12, 64},
                S{2, 7, 4, 2, 3}, S{2, 7, 4, 1, 3}, S{1, 1, 2, 1, 4}, S{3, 45, 6, 3, 5},
                S{2, 65, 6, 2, 8}, S{1, 130, 8, 1, 7}, S{2, 17, 8, 4, 10},
                S{2, 19, 4, 2, 16, 5}, S{1, 130, 4, 2, 8, 1}, S{1, 200, 4, 4, 8, 40},
                S{2, 150, 6, 3, 8, 64}, S{1, 150, 4, 1, 8, 65}, S{1, 130, 2, 2, 8, 130}}) {
        const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.hs, C = NH * hs;
        const int window = s.window;
        const size_t W = (size_t)(NH + 2 * NKV) * hs, nq = (size_t)B * T * W,
                     no = (size_t)B * T * C;
        const std::string sh =
            dims_text({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}}) +
            (window > 0 ? " window" + std::to_string(window) : "");
        trt::ModelDims dims = attention_dims(B, T, C, NH, NKV);
        dims.window = window;
        {
            OpCase c;
            c.op = "attention_forward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), out("out", no)};
            c.dims = dims;
            c.tol = kMatmulForward;
            // What a backend saves for its backward is its own business: not compared.
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const size_t n =
                    be.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                void* saved = be.alloc(std::max<size_t>(n, 1) * 4, "attention saved");
                be.attention_forward(
                    t.f(1), static_cast<float*>(saved), t.f(0),
                    trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(window));
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                h.f[1] = ref::attention_forward(h.f[0], B, T, C, NH, NKV, nullptr, nullptr,
                                                window);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "attention_backward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), operand(in("dout", no)), out("dqkv", nq)};
            c.dims = dims;
            c.tol = kMatmulBackward;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const size_t ns =
                    be.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                const size_t nx =
                    be.attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                auto* saved = static_cast<float*>(be.alloc(std::max<size_t>(ns, 1) * 4, "saved"));
                auto* scratch = static_cast<float*>(be.alloc(std::max<size_t>(nx, 1) * 4, "scr"));
                auto* o = static_cast<float*>(be.alloc(no * 4, "attention out"));
                be.attention_forward(
                    as_act(be, o), saved, t.f(0),
                    trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(window));
                be.attention_backward(
                    t.f(2), scratch, t.f(1), t.f(0), saved,
                    trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(window));
                be.free(o);
                be.free(scratch);
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = ref::attention_backward(h.f[1], h.f[0], B, T, C, NH, NKV, nullptr,
                                                 window);
            };
            add(c);
        }
    }
}

// Documents (backend.h): rows packing examples of the lengths given (cycled per row): one
// example, two, several; boundaries inside a 64-row query block, on its edges (64, 128) and
// one row past them; examples of one token; with GQA and MQA, and with a sliding window.
void attention_document_cases() {
    struct S {
        int B, T, NH, NKV, hs, window;
        std::vector<int> lens;
    };
    for (const S& s : {S{2, 7, 3, 3, 4, 0, {3, 4}}, S{1, 1, 2, 2, 4, 0, {1}},
                       S{1, 200, 2, 1, 16, 0, {200}}, S{2, 130, 4, 4, 8, 0, {64, 1, 63, 2}},
                       S{3, 150, 6, 2, 8, 0, {5, 59, 64, 7, 1, 1, 30}},
                       S{2, 65, 4, 1, 8, 0, {64, 1}}, S{2, 150, 4, 2, 8, 40, {70, 10, 1, 69}},
                       S{1, 130, 4, 2, 8, 1, {65, 65}}, S{1, 256, 4, 2, 16, 0, {100, 28, 128}}}) {
        const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.hs, C = NH * hs;
        const int window = s.window;
        const std::vector<int> lens = s.lens;
        const size_t W = (size_t)(NH + 2 * NKV) * hs, nq = (size_t)B * T * W,
                     no = (size_t)B * T * C;
        const std::string sh =
            dims_text({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}}) +
            (window > 0 ? " window" + std::to_string(window) : "") + docs_text(lens);
        trt::ModelDims dims = attention_dims(B, T, C, NH, NKV);
        dims.window = window;
        dims.documents = true;
        {
            OpCase c;
            c.op = "attention_forward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), out("out", no), positions(B, T, lens)};
            c.dims = dims;
            c.tol = kMatmulForward;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const size_t n =
                    be.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                void* saved = be.alloc(std::max<size_t>(n, 1) * 4, "attention saved");
                be.attention_forward(t.f(1), static_cast<float*>(saved), t.f(0),
                                     trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                         .with_window(window)
                                         .with_pos(t.ids(2)));
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                h.f[1] = ref::attention_forward(h.f[0], B, T, C, NH, NKV, nullptr, nullptr,
                                                window, nullptr, &h.ids[2]);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "attention_backward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), operand(in("dout", no)), out("dqkv", nq),
                         positions(B, T, lens)};
            c.dims = dims;
            c.tol = kMatmulBackward;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const size_t ns =
                    be.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                const size_t nx =
                    be.attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                auto* saved = static_cast<float*>(be.alloc(std::max<size_t>(ns, 1) * 4, "saved"));
                auto* scratch = static_cast<float*>(be.alloc(std::max<size_t>(nx, 1) * 4, "scr"));
                auto* o = static_cast<float*>(be.alloc(no * 4, "attention out"));
                be.attention_forward(as_act(be, o), saved, t.f(0),
                                     trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                         .with_window(window)
                                         .with_pos(t.ids(3)));
                be.attention_backward(t.f(2), scratch, t.f(1), t.f(0), saved,
                                      trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                          .with_window(window)
                                          .with_pos(t.ids(3)));
                be.free(o);
                be.free(scratch);
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = ref::attention_backward(h.f[1], h.f[0], B, T, C, NH, NKV, nullptr,
                                                 window, &h.ids[3]);
            };
            add(c);
        }
    }
}

// ---------------------------------------------------------------- classifier

// Which targets a case marks ignored (trt::kIgnoredTarget): none, every third (from
// position 1), or all of them.
enum class Ignored { None, Some, All };

void classifier_cases() {
    struct S {
        int N, V, Vp;
        Ignored ignored = Ignored::None;
    };
    for (S s : {S{14, 11, 16}, S{9, 257, 320}, S{51, 67, 80}, S{64, 256, 256},
                S{33, 1000, 1024}, S{5, 50257, 50304}, S{14, 11, 16, Ignored::Some},
                S{51, 67, 80, Ignored::Some}, S{33, 1000, 1024, Ignored::Some},
                S{5, 50257, 50304, Ignored::Some}, S{9, 257, 320, Ignored::All}})
        for (int mode = 0; mode < 3; mode++) {
            // 0: loss only; 1: loss and gradient; 2: gradient scaled by StepScalars::loss_scale.
            const bool write_grad = mode > 0, scaled = mode == 2;
            const int N = s.N, V = s.V, Vp = s.Vp;
            const Ignored ignored = s.ignored;
            const float dloss = 1.0f / N, loss_scale = 4.0f;
            OpCase c;
            c.op = "classifier_forward_backward";
            c.shape = dims_text({{"N", N}, {"V", V}, {"Vp", Vp}}) +
                      (mode == 0 ? " loss_only" : mode == 1 ? " grad" : " grad_loss_scale4") +
                      (ignored == Ignored::Some  ? " some_ignored"
                       : ignored == Ignored::All ? " all_ignored"
                                                 : "");
            TensorSpec logits = tensor("logits", (size_t)N * Vp, Use::InOut, -4, 4);
            // Padded columns hold garbage the op must ignore (and zero in the gradient).
            logits.fill = [=](std::vector<float>& v) {
                for (int n = 0; n < N; n++)
                    for (int i = V; i < Vp; i++) v[(size_t)n * Vp + i] = 3e4f;
            };
            TensorSpec targets = ids("targets", N, V);
            if (ignored != Ignored::None)
                targets.fill_ids = [=](std::vector<int32_t>& t) {
                    for (int n = 0; n < N; n++)
                        if (ignored == Ignored::All || n % 3 == 1) t[n] = trt::kIgnoredTarget;
                };
            c.tensors = {logits, targets, out("losses", N)};
            c.dims = rows_dims(N, 64);
            c.dims.V = Vp;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                trt::StepScalars* sc = nullptr;
                if (scaled) {
                    trt::StepScalars host;
                    host.loss_scale = loss_scale;
                    sc = static_cast<trt::StepScalars*>(be.alloc(sizeof host, "scalars"));
                    be.copy_to_device(sc, &host, sizeof host);
                }
                be.classifier_forward_backward(t.f(0), t.f(2), t.ids(1), N, V, Vp, dloss,
                                               write_grad, sc);
                be.free(sc);
            };
            c.reference = [=](HostTensors& h) {
                Vec losses, dlogits;
                ref::classifier(h.f[0], h.ids[1], N, V, Vp, dloss * (scaled ? loss_scale : 1.0),
                                losses, dlogits);
                h.f[2] = losses;
                if (write_grad) h.f[0] = dlogits;  // else the logits stay as they were
            };
            add(c);
        }
}

// ---------------------------------------------------------------- Llama family

void rmsnorm_cases() {
    struct S {
        int N, C;
        float eps;
    };
    // (No C = 1: dinp there is w·eps/(x² + eps)^1.5, all cancellation.)
    for (S s : {S{1, 7, 1e-5f}, S{13, 12, 1e-6f}, S{51, 40, 1e-5f}, S{33, 385, 1e-6f},
                S{1030, 768, 1e-5f}, S{7, 1600, 1e-6f}, S{5, 3, 1e-5f}, S{9, 2100, 1e-5f}}) {
        const int N = s.N, C = s.C;
        const float eps = s.eps;
        const size_t NC = (size_t)N * C;
        const std::string sh = dims_text({{"N", N}, {"C", C}}) + (eps < 1e-5f ? " eps1e-6" : "");
        {
            OpCase c;
            c.op = "rmsnorm_forward";
            c.shape = sh;
            c.tensors = {in("inp", NC, -2, 3), in("w", C, 0.5f, 1.5f), out("out", NC),
                         out("rstd", N)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.rmsnorm_forward(t.f(2), t.f(3), t.f(0), t.f(1), N, C, eps);
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = ref::rmsnorm_forward(h.f[0], h.f[1], N, C, eps, &h.f[3]);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "rmsnorm_backward";
            c.shape = sh;
            c.tensors = {in("inp", NC, -2, 3), in("w", C, 0.5f, 1.5f), in("dout", NC),
                         acc("dinp", NC), acc("dw", C)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                auto* o = static_cast<float*>(be.alloc(NC * 4 + (size_t)N * 4, "rms fwd"));
                float* rstd = o + NC;
                be.rmsnorm_forward(as_act(be, o), rstd, t.f(0), t.f(1), N, C, eps);
                be.rmsnorm_backward(t.f(3), t.f(4), t.f(2), t.f(0), t.f(1), rstd, N, C);
                be.free(o);
            };
            c.reference = [=](HostTensors& h) {
                Vec dinp, dw;
                ref::rmsnorm_backward(h.f[2], h.f[0], h.f[1], N, C, eps, dinp, dw);
                add_into(h.f[3], dinp);
                add_into(h.f[4], dw);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "residual_rmsnorm_forward";
            c.shape = sh;
            c.tensors = {in("a", NC, -2, 2), in("b", NC), in("w", C, 0.5f, 1.5f),
                         bitwise(out("res_out", NC)), out("out", NC), out("rstd", N)};
            c.dims = rows_dims(N, C);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.residual_rmsnorm_forward(t.f(3), t.f(4), t.f(5), t.f(0), t.f(1), t.f(2), N, C,
                                            eps);
            };
            c.reference = [=](HostTensors& h) {
                Vec res(NC);
                for (size_t i = 0; i < NC; i++) res[i] = h.f[0][i] + h.f[1][i];
                h.f[4] = ref::rmsnorm_forward(res, h.f[2], N, C, eps, &h.f[5]);
                h.f[3] = res;
            };
            add(c);
        }
    }
}

// Qwen3's q/k norm, in place on qkv's q and k heads: one head of each, grouped-query heads,
// multi-query, model head sizes. Rows are independent, so one sequence of N rows.
void qk_norm_cases() {
    struct S {
        int N, NH, NKV, hs;
    };
    for (S s : {S{1, 1, 1, 4}, S{5, 4, 2, 8}, S{17, 6, 3, 12}, S{33, 8, 1, 64}, S{9, 16, 4, 128}}) {
        const int N = s.N, NH = s.NH, NKV = s.NKV, hs = s.hs;
        const int W = (NH + 2 * NKV) * hs;
        const size_t q_rows = (size_t)N * NH, rows = (size_t)N * (NH + NKV);
        const float eps = 1e-6f;
        OpCase c;
        c.op = "qk_norm_forward";
        c.shape = dims_text({{"N", N}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}});
        c.tensors = {tensor("qkv", (size_t)N * W, Use::InOut, -2, 3), in("wq", hs, 0.5f, 1.5f),
                     in("wk", hs, 0.5f, 1.5f), bitwise(out("pre", rows * hs)), out("rstd", rows)};
        c.dims = rows_dims(N, W);
        c.tol = kFp32Math;
        c.run = [=](Backend& be, const DeviceTensors& t) {
            auto* scratch = static_cast<float*>(be.alloc(rows * hs * 4, "qk_norm scratch"));
            be.qk_norm_forward(t.f(0), t.f(3), t.f(4), t.f(1), t.f(2), as_act(be, scratch), eps,
                               trt::AttentionShape::from_heads(1, N, NH, NKV, hs));
            be.free(scratch);
        };
        c.reference = [=](HostTensors& h) {
            Vec& qkv = h.f[0];
            // Head r of the compact layout (q rows n*NH + j, then k rows) <-> its columns.
            auto column = [=](size_t r) {
                const size_t n = r < q_rows ? r / NH : (r - q_rows) / NKV;
                const size_t j = r < q_rows ? r % NH : NH + (r - q_rows) % NKV;
                return n * W + j * hs;
            };
            Vec pre(rows * hs);
            for (size_t r = 0; r < rows; r++)
                for (int e = 0; e < hs; e++) pre[r * hs + e] = qkv[column(r) + e];
            const Vec q(pre.begin(), pre.begin() + q_rows * hs),
                k(pre.begin() + q_rows * hs, pre.end());
            Vec rq, rk;
            const Vec qn = ref::rmsnorm_forward(q, h.f[1], (int)q_rows, hs, eps, &rq);
            const Vec kn = ref::rmsnorm_forward(k, h.f[2], (int)(rows - q_rows), hs, eps, &rk);
            for (size_t r = 0; r < rows; r++)
                for (int e = 0; e < hs; e++)
                    qkv[column(r) + e] = r < q_rows ? qn[r * hs + e] : kn[(r - q_rows) * hs + e];
            h.f[3] = pre;
            rq.insert(rq.end(), rk.begin(), rk.end());
            h.f[4] = rq;
        };
        add(c);
    }
}

void rope_cases() {
    struct S {
        int B, T, NH, NKV, hs, pos0;
    };
    for (S s : {S{2, 7, 4, 4, 8, 0}, S{2, 7, 4, 2, 6, 3}, S{1, 5, 6, 1, 10, 11},
                S{3, 33, 8, 2, 2, 0}, S{1, 70, 2, 1, 34, 1000}, S{2, 17, 4, 2, 10, 5},
                S{2, 64, 12, 4, 64, 100}, S{1, 5, 3, 3, 128, 7}})
        for (bool backward : {false, true}) {
            const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.hs, pos0 = s.pos0;
            const int max_pos = pos0 + T + 3, half = hs / 2;
            const size_t W = (size_t)(NH + 2 * NKV) * hs, n = (size_t)B * T * W;
            OpCase c;
            c.op = backward ? "rope_backward" : "rope_forward";
            c.shape = dims_text(
                {{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}, {"pos0", pos0}});
            // The HF tables as the model builds them: fp32 values of the double angles.
            Vec cd, sd;
            ref::rope_tables(max_pos, hs, 10000.0, cd, sd);
            TensorSpec cos_t = in("cos", (size_t)max_pos * half), sin_t = in("sin", (size_t)max_pos * half);
            cos_t.fill = [cd](std::vector<float>& v) { v.assign(cd.begin(), cd.end()); };
            sin_t.fill = [sd](std::vector<float>& v) { v.assign(sd.begin(), sd.end()); };
            // In place on q and k; V untouched (compared with the rest).
            c.tensors = {cos_t, sin_t, tensor(backward ? "dqkv" : "qkv", n, Use::InOut, -2, 2)};
            c.dims = attention_dims(B, T, NH * hs, NH, NKV);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                if (backward)
                    be.rope_backward(t.f(2), t.f(0), t.f(1), pos0,
                                     trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
                else
                    be.rope_forward(t.f(2), t.f(0), t.f(1), pos0,
                                    trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = backward
                             ? ref::rope_backward(h.f[2], h.f[0], h.f[1], B, T, NH, NKV, hs, pos0)
                             : ref::rope_forward(h.f[2], h.f[0], h.f[1], B, T, NH, NKV, hs, pos0);
            };
            add(c);
        }
}

// Documents: each row's angle is its example's position (pos; pos0 is then ignored, so the
// cases pass a pos0 that would index past the tables).
void rope_document_cases() {
    struct S {
        int B, T, NH, NKV, hs;
        std::vector<int> lens;
    };
    for (const S& s : {S{2, 17, 4, 2, 10, {5, 1, 11}}, S{1, 70, 2, 1, 34, {64, 6}},
                       S{2, 7, 4, 4, 8, {7}}, S{3, 33, 8, 2, 2, {1, 1, 31}}})
        for (bool backward : {false, true}) {
            const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.hs, pos0 = 1000;
            const int max_pos = T + 3, half = hs / 2;
            const std::vector<int> lens = s.lens;
            const size_t W = (size_t)(NH + 2 * NKV) * hs, n = (size_t)B * T * W;
            OpCase c;
            c.op = backward ? "rope_backward" : "rope_forward";
            c.shape = dims_text({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}}) +
                      docs_text(lens);
            Vec cd, sd;
            ref::rope_tables(max_pos, hs, 10000.0, cd, sd);
            TensorSpec cos_t = in("cos", (size_t)max_pos * half), sin_t = in("sin", (size_t)max_pos * half);
            cos_t.fill = [cd](std::vector<float>& v) { v.assign(cd.begin(), cd.end()); };
            sin_t.fill = [sd](std::vector<float>& v) { v.assign(sd.begin(), sd.end()); };
            c.tensors = {cos_t, sin_t, tensor(backward ? "dqkv" : "qkv", n, Use::InOut, -2, 2),
                         positions(B, T, lens)};
            c.dims = attention_dims(B, T, NH * hs, NH, NKV);
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                if (backward)
                    be.rope_backward(
                        t.f(2), t.f(0), t.f(1), pos0,
                        trt::AttentionShape::from_heads(B, T, NH, NKV, hs).with_pos(t.ids(3)));
                else
                    be.rope_forward(
                        t.f(2), t.f(0), t.f(1), pos0,
                        trt::AttentionShape::from_heads(B, T, NH, NKV, hs).with_pos(t.ids(3)));
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = backward ? ref::rope_backward(h.f[2], h.f[0], h.f[1], B, T, NH, NKV, hs,
                                                       pos0, &h.ids[3])
                                  : ref::rope_forward(h.f[2], h.f[0], h.f[1], B, T, NH, NKV, hs,
                                                      pos0, &h.ids[3]);
            };
            add(c);
        }
}

void swiglu_cases() {
    for (auto [N, F] : {std::pair{1, 1}, std::pair{7, 13}, std::pair{51, 40},
                        std::pair{33, 301}, std::pair{130, 1037}, std::pair{3, 5}}) {
        const size_t n1 = (size_t)N * F, n2 = 2 * n1;
        const std::string sh = dims_text({{"N", N}, {"F", F}});
        TensorSpec inp = in("inp", n2, -8, 8);
        // A few saturated gates (e^-x beyond float range on either side) where other values
        // dominate the norm: silu(-100) is a float denormal, all a 1x1 case would hold.
        if (F >= 13)
            inp.fill = [](std::vector<float>& v) {
                const float extremes[] = {-100.0f, -90.0f, 90.0f, 100.0f, -20.0f, 20.0f};
                for (size_t k = 0; k < 6; k++) v[k] = extremes[k];
            };
        trt::ModelDims d = rows_dims(N, std::max(1, (F + 3) / 4));
        d.F = F;
        {
            OpCase c;
            c.op = "swiglu_forward";
            c.shape = sh;
            c.tensors = {inp, out("out", n1)};
            c.dims = d;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.swiglu_forward(t.f(1), t.f(0), N, F);
            };
            c.reference = [=](HostTensors& h) { h.f[1] = ref::swiglu_forward(h.f[0], N, F); };
            add(c);
        }
        {
            OpCase c;
            c.op = "swiglu_backward";
            c.shape = sh;
            c.tensors = {inp, in("dout", n1), out("dinp", n2)};
            c.dims = d;
            c.tol = kFp32Math;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.swiglu_backward(t.f(2), t.f(0), t.f(1), N, F);
            };
            c.reference = [=](HostTensors& h) {
                h.f[2] = ref::swiglu_backward(h.f[1], h.f[0], N, F);
            };
            add(c);
        }
    }
}

// ---------------------------------------------------------------- LoRA's column slices, GELU

void column_cases() {
    struct S {
        int N, W, c0, M;
        float scale;
    };
    // A slice at the start, in the middle (Llama's k_proj of [q|k|v]), at the end, the whole
    // row, and a one-column one; odd widths keep rows unaligned.
    for (S s : {S{7, 24, 0, 8, 2.0f}, S{33, 40, 16, 8, 0.5f}, S{33, 40, 24, 16, -1.25f},
                S{65, 13, 0, 13, 1.0f}, S{5, 9, 4, 1, 3.0f}, S{130, 2304, 768, 768, 0.125f}}) {
        const int N = s.N, W = s.W, c0 = s.c0, M = s.M;
        const float scale = s.scale;
        const std::string sh = dims_text({{"N", N}, {"W", W}, {"c0", c0}, {"M", M}});
        const trt::ModelDims d = rows_dims(N, W);
        {
            OpCase c;
            c.op = "add_columns";
            c.shape = sh;
            c.tensors = {acc("out", (size_t)N * W), in("in", (size_t)N * M)};
            c.dims = d;
            c.tol = kFp32Math;
            c.large = N * W > 100000;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.add_columns(t.f(0), t.f(1), scale, N, W, c0, M);
            };
            c.reference = [=](HostTensors& h) {  // columns outside the slice keep their pre-fill
                for (int n = 0; n < N; n++)
                    for (int j = 0; j < M; j++)
                        h.f[0][(size_t)n * W + c0 + j] += scale * h.f[1][(size_t)n * M + j];
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "copy_columns";
            c.shape = sh;
            c.tensors = {out("out", (size_t)N * M), in("in", (size_t)N * W)};
            c.dims = d;
            c.tol = kFp32Math;
            c.large = N * W > 100000;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                be.copy_columns(t.f(0), t.f(1), scale, N, W, c0, M);
            };
            c.reference = [=](HostTensors& h) {
                h.f[0].assign((size_t)N * M, 0.0);
                for (int n = 0; n < N; n++)
                    for (int j = 0; j < M; j++)
                        h.f[0][(size_t)n * M + j] = scale * h.f[1][(size_t)n * W + c0 + j];
            };
            add(c);
        }
    }
    for (size_t n : {size_t{1}, size_t{37}, size_t{4096}, size_t{100003}}) {
        OpCase c;
        c.op = "gelu_forward";
        c.shape = dims_text({{"n", (long)n}});
        c.tensors = {in("inp", n, -6, 6), out("out", n)};
        c.dims = elementwise_dims(n);
        c.tol = kFp32Math;
        c.run = [=](Backend& be, const DeviceTensors& t) { be.gelu_forward(t.f(1), t.f(0), n); };
        c.reference = [=](HostTensors& h) {
            h.f[1].assign(n, 0.0);
            for (size_t i = 0; i < n; i++) h.f[1][i] = ref::gelu(h.f[0][i]);
        };
        add(c);
    }
}

// ---------------------------------------------------------------- dropout

// The masks' step lives in backend memory (StepScalars), as in a training step.
trt::StepScalars* step_scalars(Backend& be, int64_t step) {
    trt::StepScalars host;
    host.step = step;
    auto* sc = static_cast<trt::StepScalars*>(be.alloc(sizeof host, "scalars"));
    be.copy_to_device(sc, &host, sizeof host);
    return sc;
}

trt::DropoutMask dropout_mask(float p, uint32_t site, uint64_t index0,
                              const trt::StepScalars* sc) {
    trt::DropoutMask m;
    m.p = p;
    m.seed = 0x123456789abcULL;
    m.scalars = sc;
    m.micro_step = 2;
    m.site = site;
    m.index0 = index0;
    return m;
}
constexpr int64_t kDropoutStep = 7;

void dropout_cases() {
    struct S {
        size_t n;
        float p;
        uint64_t index0;  // a chunk's offset into the stream, not a multiple of 4
    };
    for (S s : {S{1, 0.5f, 0}, S{37, 0.1f, 0}, S{37, 0.3f, 6}, S{4099, 0.5f, 0},
                S{100003, 0.1f, 0}, S{100003, 0.9f, 13}}) {
        OpCase c;
        c.op = "dropout";
        c.shape = dims_text({{"n", (long)s.n}, {"index0", (long)s.index0}}) +
                  " p" + std::to_string(s.p).substr(0, 3);
        // The same mask everywhere, and a product of two exact values: bitwise (fp32).
        c.tensors = {in("in", s.n), bitwise(out("out", s.n))};
        c.dims = elementwise_dims(s.n);
        c.tol = kFp32Math;
        c.run = [=](Backend& be, const DeviceTensors& t) {
            trt::StepScalars* sc = step_scalars(be, kDropoutStep);
            be.dropout(t.f(1), t.f(0), s.n, dropout_mask(s.p, 5, s.index0, sc));
            be.free(sc);
        };
        c.reference = [=](HostTensors& h) {
            const Vec k = ref::dropout_multipliers(s.n, s.p, 0x123456789abcULL, kDropoutStep, 2,
                                                   5, s.index0);
            h.f[1].assign(s.n, 0.0);
            for (size_t i = 0; i < s.n; i++) h.f[1][i] = h.f[0][i] * k[i];
        };
        add(c);
    }
    struct A {
        int B, T, NH, NKV, hs;
        int window = 0;
        std::vector<int> lens = {};  // documents (doc_positions); empty: none
    };
    for (const A& s : {A{2, 7, 3, 3, 4}, A{3, 45, 5, 5, 8}, A{1, 130, 2, 2, 48},
                       A{2, 65, 6, 2, 8}, A{1, 1, 2, 1, 4}, A{2, 150, 4, 2, 8, 70},
                       A{2, 150, 4, 2, 8, 0, {64, 1, 63, 22}},
                       A{2, 130, 6, 3, 8, 50, {3, 90, 1, 36}}}) {
        const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.hs, C = NH * hs;
        const int window = s.window;
        const std::vector<int> lens = s.lens;
        const bool docs = !lens.empty();
        const size_t W = (size_t)(NH + 2 * NKV) * hs, nq = (size_t)B * T * W,
                     no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        const std::string sh =
            dims_text({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs}}) + " p0.2" +
            (window > 0 ? " window" + std::to_string(window) : "") +
            (docs ? docs_text(lens) : "");
        trt::ModelDims d = attention_dims(B, T, C, NH, NKV);
        d.attention_dropout = true;
        d.window = window;
        d.documents = docs;
        auto keep = [=] {
            return ref::dropout_multipliers(na, 0.2f, 0x123456789abcULL, kDropoutStep, 2, 9);
        };
        {
            OpCase c;
            c.op = "attention_forward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), out("out", no)};
            if (docs) c.tensors.push_back(positions(B, T, lens));  // [2]
            c.dims = d;
            c.tol = kMatmulForward;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const size_t n = 2 * be.attention_saved_floats(
                                         trt::AttentionShape::from_width(B, T, C, NH, NKV));
                void* saved = be.alloc(std::max<size_t>(n, 1) * 4, "attention saved");
                trt::StepScalars* sc = step_scalars(be, kDropoutStep);
                be.attention_forward(t.f(1), static_cast<float*>(saved), t.f(0),
                                     trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                         .with_window(window)
                                         .with_pos(docs ? t.ids(2) : nullptr)
                                         .with_dropout(dropout_mask(0.2f, 9, 0, sc)));
                be.free(sc);
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                const Vec k = keep();
                h.f[1] = ref::attention_forward(h.f[0], B, T, C, NH, NKV, nullptr, &k, window,
                                                nullptr, docs ? &h.ids[2] : nullptr);
            };
            add(c);
        }
        {
            OpCase c;
            c.op = "attention_backward";
            c.shape = sh;
            c.tensors = {operand(in("qkv", nq, -2, 2)), operand(in("dout", no)), out("dqkv", nq)};
            if (docs) c.tensors.push_back(positions(B, T, lens));  // [3]
            c.dims = d;
            c.tol = kMatmulBackward;
            c.run = [=](Backend& be, const DeviceTensors& t) {
                const int32_t* pos = docs ? t.ids(3) : nullptr;
                const size_t ns = 2 * be.attention_saved_floats(
                                          trt::AttentionShape::from_width(B, T, C, NH, NKV));
                const size_t nx =
                    be.attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV));
                auto* saved = static_cast<float*>(be.alloc(std::max<size_t>(ns, 1) * 4, "saved"));
                auto* scratch = static_cast<float*>(be.alloc(std::max<size_t>(nx, 1) * 4, "scr"));
                auto* o = static_cast<float*>(be.alloc(no * 4, "attention out"));
                trt::StepScalars* sc = step_scalars(be, kDropoutStep);
                be.attention_forward(as_act(be, o), saved, t.f(0),
                                     trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                         .with_window(window)
                                         .with_pos(pos)
                                         .with_dropout(dropout_mask(0.2f, 9, 0, sc)));
                be.attention_backward(t.f(2), scratch, t.f(1), t.f(0), saved,
                                      trt::AttentionShape::from_width(B, T, C, NH, NKV)
                                          .with_window(window)
                                          .with_pos(pos)
                                          .with_dropout(dropout_mask(0.2f, 9, 0, sc)));
                be.free(sc);
                be.free(o);
                be.free(scratch);
                be.free(saved);
            };
            c.reference = [=](HostTensors& h) {
                const Vec k = keep();
                h.f[2] = ref::attention_backward(h.f[1], h.f[0], B, T, C, NH, NKV, &k, window,
                                                 docs ? &h.ids[3] : nullptr);
            };
            add(c);
        }
    }
}

}  // namespace

std::vector<std::string> op_names() {
    std::vector<std::string> names;
    for (const OpCase& c : all_cases())
        if (std::find(names.begin(), names.end(), c.op) == names.end()) names.push_back(c.op);
    return names;
}

bool op_kind(const std::string& op, trt::OpKind* out) {
    for (int i = 0; i < trt::kOpKinds; ++i) {
        if (op == trt::op_name(static_cast<trt::OpKind>(i))) {
            *out = static_cast<trt::OpKind>(i);
            return true;
        }
    }
    return false;
}

const std::vector<OpCase>& all_cases() {
    static const std::vector<OpCase>* table = [] {
        encoder_cases();
        encoder_document_cases();
        layernorm_cases();
        residual_layernorm_cases();
        matmul_cases();
        matmul_gelu_cases();
        qmatmul_cases();
        qencoder_cases();
        gelu_backward_bias_cases();
        attention_cases();
        attention_document_cases();
        attention_cached_cases();
        classifier_cases();
        rmsnorm_cases();
        qk_norm_cases();
        rope_cases();
        rope_document_cases();
        swiglu_cases();
        column_cases();
        dropout_cases();
        return new std::vector<OpCase>(std::move(cases));
    }();
    return *table;
}

}  // namespace opcase

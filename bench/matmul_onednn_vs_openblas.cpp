// oneDNN fp32 matmul against OpenBLAS cblas_sgemm at libtrainrt's linear-layer shapes (issue 17),
// plus what oneDNN's bf16 matmul (bf16 src/weights, f32 accumulation, f32 dst) does on this CPU.
//
// Standalone: needs only dnnl.hpp (oneDNN 2.x with the OpenMP runtime; the 3.x constructors
// are under #if, untested) and cblas.h (OpenBLAS, OpenMP build).
// bench/matmul_onednn_vs_openblas.sh compiles and runs it:
//   g++ -O2 -std=c++17 -fopenmp matmul_onednn_vs_openblas.cpp -ldnnl -lopenblas
//
// For every layer shape it times the three products of a training step, fp32, row-major, as
// src/backend/cpu/cpu_matmul.cpp does them:
//   fwd   out[N,M]  = inp[N,K] · W[K,M]          (OutIn head: inp · W[M,K]ᵀ)
//   dinp  dinp[N,K] = dout[N,M] · W[K,M]ᵀ        (OutIn head: dout · W[M,K])
//   dW    dW[K,M]  += inp[N,K]ᵀ · dout[N,M]      (OutIn head: dW[M,K] += doutᵀ · inp)
// with three engines, interleaved call by call (the order rotates every repetition, so a change
// in machine load hits all of them):
//   blas      one cblas_sgemm, OpenBLAS threaded with openblas_set_num_threads(T)
//   blas-rows libtrainrt's own way for fwd/dinp: the N output rows split over T OpenMP threads,
//             one single-threaded sgemm per block (only when T > 1; dW is always one call)
//   onednn    one dnnl::matmul primitive, created once per shape and thread count outside the
//             timed loop; plain row-major memory (strided descriptors for the transposes, the
//             weights stay in libtrainrt's layout: no blocked/reordered weights); dW accumulates
//             through a sum post-op (beta = 1)
// Each product is first run once by every engine from the same inputs (and the same initial dW)
// and the results compared: relative Frobenius error ||x - blas|| / ||blas||.
// A thread count's shapes are passed over --rounds times (default 3), so a burst of load from
// elsewhere hits one round, not one product; ms = the median of every round's calls pooled, and
// the ratio's range over the rounds' medians is printed beside it. Output: markdown on stdout.
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "dnnl.hpp"

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

struct Options {
    std::vector<int> threads{1, 2};
    std::string sets = "a,b";
    std::string layers;  // comma-separated layer names ("attn_proj" = "attn proj"); empty: all
    int rounds = 3;                    // passes over all shapes per thread count, pooled
    int reps = 5, warmup = 1;          // per product and round
    int big_reps = 1, big_warmup = 1;  // products over 20 GFLOP (the GPT-2 head)
    bool bf16 = true;
};

// One layer: K inputs, M outputs, N rows; `count` = how many such layers one training step has.
struct Layer {
    const char* set;
    const char* name;
    int N, K, M;
    bool outin;
    int count;
};

// C[m,n] (+)= op(A)[m,k] · op(B)[k,n], all row-major; ta: A is stored [k,m]; tb: B stored [n,k].
struct Gemm {
    const char* product;
    int m, n, k;
    bool ta, tb;
    float beta;
    bool rows_split;  // rows of C = rows of A (not transposed): libtrainrt splits them
};

std::vector<Gemm> products(const Layer& L) {
    const int N = L.N, K = L.K, M = L.M;
    if (!L.outin)
        return {{"fwd", N, M, K, false, false, 0.0f, true},
                {"dinp", N, K, M, false, true, 0.0f, true},
                {"dW+=", K, M, N, true, false, 1.0f, false}};
    return {{"fwd", N, M, K, false, true, 0.0f, true},
            {"dinp", N, K, M, false, false, 0.0f, true},
            {"dW+=", M, K, N, true, false, 1.0f, false}};
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void fill(std::vector<float>& v, uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (auto& x : v) x = d(g);
}

double rel_err(const std::vector<float>& x, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); i++) {
        double d = (double)x[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Round-to-nearest-even fp32 -> bf16 (finite inputs).
uint16_t to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void blas_gemm(const Gemm& g, const float* A, const float* B, float* C) {
    cblas_sgemm(CblasRowMajor, g.ta ? CblasTrans : CblasNoTrans, g.tb ? CblasTrans : CblasNoTrans,
                g.m, g.n, g.k, 1.0f, A, g.ta ? g.m : g.k, B, g.tb ? g.k : g.n, g.beta, C, g.n);
}

// libtrainrt's fwd/dinp: rows of C split over `threads` OpenMP threads, a serial sgemm each
// (OpenBLAS's OpenMP build runs serially inside a parallel region).
void blas_rows(const Gemm& g, const float* A, const float* B, float* C, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int p = 0; p < threads; p++) {
        const int r0 = (int)((long)g.m * p / threads), r1 = (int)((long)g.m * (p + 1) / threads);
        if (r1 > r0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, g.tb ? CblasTrans : CblasNoTrans, r1 - r0,
                        g.n, g.k, 1.0f, A + (size_t)r0 * g.k, g.k, B, g.tb ? g.k : g.n, g.beta,
                        C + (size_t)r0 * g.n, g.n);
    }
}

// Plain row-major descriptors: op(A) {m,k}, op(B) {k,n}, C {m,n}; transposes are strides.
dnnl::memory::desc a_desc(const Gemm& g, dt t) {
    return dnnl::memory::desc({g.m, g.k}, t, g.ta ? dims{1, g.m} : dims{g.k, 1});
}
dnnl::memory::desc b_desc(const Gemm& g, dt t) {
    return dnnl::memory::desc({g.k, g.n}, t, g.tb ? dims{1, g.k} : dims{g.n, 1});
}
dnnl::memory::desc c_desc(const Gemm& g) {
    return dnnl::memory::desc({g.m, g.n}, dt::f32, dims{g.n, 1});
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, const Gemm& g, dt in_type) {
    dnnl::primitive_attr attr;
    if (g.beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(g.beta);
        attr.set_post_ops(po);
    }
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(eng, a_desc(g, in_type), b_desc(g, in_type), c_desc(g),
                                        attr);
#else
    dnnl::matmul::desc d(a_desc(g, in_type), b_desc(g, in_type), c_desc(g));
    return dnnl::matmul::primitive_desc(d, attr, eng);
#endif
}

const char* isa_name(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::all: return "all";
        case dnnl::cpu_isa::sse41: return "sse41";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        default: return "other (see DNNL_VERBOSE)";
    }
}

struct Row {
    Layer L;
    Gemm g;
    double gflop;
    std::string impl;
    std::vector<double> t_blas, t_rows, t_dnnl;  // timed samples, every round pooled
    std::vector<double> m_blas, m_rows, m_dnnl;  // each round's median
    double err = 0;                              // largest relative error seen (oneDNN, row-split)
};

struct Bf16Row {
    Layer L;
    Gemm g;
    double gflop;
    std::string status;  // "ok" or the exception text
    std::string impl;
    double ms_f32, ms_bf16, err;
};

std::string status_str(dnnl_status_t st) {
    const int v = (int)st;
    const char* name = v == dnnl_unimplemented    ? "dnnl_unimplemented"
                       : v == dnnl_invalid_arguments ? "dnnl_invalid_arguments"
                       : v == dnnl_out_of_memory     ? "dnnl_out_of_memory"
                       : v == dnnl_runtime_error     ? "dnnl_runtime_error"
                                                     : "other";
    return "status " + std::to_string(v) + " = " + name;
}

bool big(const Gemm& g) { return 2.0 * g.m * g.n * g.k > 20e9; }

// One round of one product: buffers and the oneDNN primitive are made here, before the
// correctness check and the timed loop (never per call).
void run_fp32(const dnnl::engine& eng, dnnl::stream& strm, Row& r, const Options& o,
              int threads) {
    const Gemm& g = r.g;
    std::vector<float> A((size_t)g.m * g.k), B((size_t)g.k * g.n), C0((size_t)g.m * g.n, 0.0f);
    fill(A, 1u + g.m + 7u * g.k);
    fill(B, 2u + g.n + 5u * g.k);
    if (g.beta != 0.0f) fill(C0, 3u);
    std::vector<float> Cb = C0, Cd = C0, Cr;

    auto pd = make_pd(eng, g, dt::f32);
    r.impl = pd.impl_info_str();
    dnnl::matmul prim(pd);
    dnnl::memory ma(pd.src_desc(), eng, A.data()), mb(pd.weights_desc(), eng, B.data()),
        mc(pd.dst_desc(), eng, Cd.data());
    const std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    const bool rows = g.rows_split && threads > 1;

    // Correctness: one call each from the same C0.
    blas_gemm(g, A.data(), B.data(), Cb.data());
    prim.execute(strm, args);
    strm.wait();
    r.err = std::max(r.err, rel_err(Cd, Cb));
    if (rows) {
        Cr = C0;
        blas_rows(g, A.data(), B.data(), Cr.data(), threads);
        r.err = std::max(r.err, rel_err(Cr, Cb));
    }

    std::vector<std::function<void()>> eng_fn{
        [&] { blas_gemm(g, A.data(), B.data(), Cb.data()); },
        [&] {
            prim.execute(strm, args);
            strm.wait();
        }};
    if (rows) eng_fn.push_back([&] { blas_rows(g, A.data(), B.data(), Cr.data(), threads); });
    std::vector<std::vector<double>> t(eng_fn.size());
    const int warm = big(g) ? o.big_warmup : o.warmup, reps = big(g) ? o.big_reps : o.reps;
    for (int rep = 0; rep < warm + reps; rep++)
        for (size_t j = 0; j < eng_fn.size(); j++) {
            const size_t e = (j + rep) % eng_fn.size();
            const double t0 = now_ms();
            eng_fn[e]();
            const double dt_ms = now_ms() - t0;
            if (rep >= warm) t[e].push_back(dt_ms);
        }
    r.t_blas.insert(r.t_blas.end(), t[0].begin(), t[0].end());
    r.t_dnnl.insert(r.t_dnnl.end(), t[1].begin(), t[1].end());
    r.m_blas.push_back(median(t[0]));
    r.m_dnnl.push_back(median(t[1]));
    if (rows) {
        r.t_rows.insert(r.t_rows.end(), t[2].begin(), t[2].end());
        r.m_rows.push_back(median(t[2]));
    }
}

// "lo–hi" of a[i] / b[i] over rounds.
std::string ratio_range(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.empty() || a.size() != b.size()) return "—";
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < a.size(); i++) {
        lo = std::min(lo, a[i] / b[i]);
        hi = std::max(hi, a[i] / b[i]);
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f–%.2f", lo, hi);
    return buf;
}

Bf16Row run_bf16(const dnnl::engine& eng, dnnl::stream& strm, const Layer& L, const Gemm& g,
                 const Options& o) {
    Bf16Row r{L, g, 2.0 * g.m * g.n * g.k / 1e9, "", "", NAN, NAN, NAN};
    dnnl::matmul::primitive_desc pd;
    try {
        pd = make_pd(eng, g, dt::bf16);
    } catch (const dnnl::error& e) {
        r.status = std::string("dnnl::error: ") + e.what() +
                   " (" + status_str(e.status) + ")";
        // Not a layout or post-op matter? Try again with format_tag::any everywhere and no
        // post-op (oneDNN free to pick any blocked layout).
        try {
            using tag = dnnl::memory::format_tag;
            const dnnl::memory::desc a({g.m, g.k}, dt::bf16, tag::any),
                b({g.k, g.n}, dt::bf16, tag::any), c({g.m, g.n}, dt::f32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
            dnnl::matmul::primitive_desc any(eng, a, b, c);
#else
            dnnl::matmul::primitive_desc any(dnnl::matmul::desc(a, b, c), eng);
#endif
            r.status += std::string("; with format_tag::any, no post-op: created (") +
                        any.impl_info_str() + ")";
        } catch (const dnnl::error& e2) {
            r.status += std::string("; with format_tag::any, no post-op: ") + e2.what() + " (" +
                        status_str(e2.status) + ")";
        }
        return r;
    }
    r.status = "ok";
    r.impl = pd.impl_info_str();
    std::vector<float> A((size_t)g.m * g.k), B((size_t)g.k * g.n), C0((size_t)g.m * g.n, 0.0f);
    fill(A, 1u + g.m + 7u * g.k);
    fill(B, 2u + g.n + 5u * g.k);
    if (g.beta != 0.0f) fill(C0, 3u);
    std::vector<uint16_t> A16(A.size()), B16(B.size());
    for (size_t i = 0; i < A.size(); i++) A16[i] = to_bf16(A[i]);
    for (size_t i = 0; i < B.size(); i++) B16[i] = to_bf16(B[i]);
    std::vector<float> Cf = C0, Cb = C0;
    auto pdf = make_pd(eng, g, dt::f32);
    dnnl::matmul pf(pdf), pb(pd);
    std::unordered_map<int, dnnl::memory> af{
        {DNNL_ARG_SRC, dnnl::memory(pdf.src_desc(), eng, A.data())},
        {DNNL_ARG_WEIGHTS, dnnl::memory(pdf.weights_desc(), eng, B.data())},
        {DNNL_ARG_DST, dnnl::memory(pdf.dst_desc(), eng, Cf.data())}};
    std::unordered_map<int, dnnl::memory> ab{
        {DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), eng, A16.data())},
        {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), eng, B16.data())},
        {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng, Cb.data())}};
    pf.execute(strm, af);
    pb.execute(strm, ab);
    strm.wait();
    r.err = rel_err(Cb, Cf);  // bf16 rounding of the inputs: expect ~1e-3
    std::vector<double> tf, tb;
    for (int rep = 0; rep < o.warmup + o.reps; rep++) {
        for (int j = 0; j < 2; j++) {
            const bool bf = ((j + rep) % 2) == 1;
            const double t0 = now_ms();
            (bf ? pb : pf).execute(strm, bf ? ab : af);
            strm.wait();
            const double d = now_ms() - t0;
            if (rep >= o.warmup) (bf ? tb : tf).push_back(d);
        }
    }
    r.ms_f32 = median(tf);
    r.ms_bf16 = median(tb);
    return r;
}

std::vector<int> parse_ints(const char* s) {
    std::vector<int> v;
    for (const char* p = s; *p;) {
        v.push_back(std::atoi(p));
        while (*p && *p != ',') p++;
        if (*p == ',') p++;
    }
    return v;
}

void usage() {
    std::fprintf(stderr,
                 "usage: matmul_onednn_vs_openblas [--threads 1,2] [--sets a,b] "
                 "[--layers qkv,attn_proj,fc,fc_proj,head] [--rounds 3] [--reps 5] [--warmup 1] "
                 "[--big-reps 1] [--big-warmup 1] [--no-bf16]\n");
}

std::string fmt(const char* f, double x) {
    if (std::isnan(x)) return "—";
    char b[64];
    std::snprintf(b, sizeof b, f, x);
    return b;
}

std::string shape_str(const Layer& L) {
    char b[96];
    std::snprintf(b, sizeof b, "(%s) %s N%d K%d M%d%s", L.set, L.name, L.N, L.K, L.M,
                  L.outin ? " OutIn" : "");
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                usage();
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--threads") o.threads = parse_ints(next());
        else if (a == "--sets") o.sets = next();
        else if (a == "--layers") o.layers = next();
        else if (a == "--rounds") o.rounds = std::atoi(next());
        else if (a == "--reps") o.reps = std::atoi(next());
        else if (a == "--warmup") o.warmup = std::atoi(next());
        else if (a == "--big-reps") o.big_reps = std::atoi(next());
        else if (a == "--big-warmup") o.big_warmup = std::atoi(next());
        else if (a == "--no-bf16") o.bf16 = false;
        else {
            usage();
            return 2;
        }
    }
    if (o.rounds < 1 || o.reps < 1 || o.big_reps < 1 || o.warmup < 0 || o.big_warmup < 0 ||
        o.threads.empty()) {
        usage();
        return 2;
    }

    // (a) the CPU benchmark model (`small`: L6 C384 V256, B8 T256); (b) GPT-2 small at N=1024.
    const std::vector<Layer> all{
        {"a", "qkv", 2048, 384, 1152, false, 6},     {"a", "attn proj", 2048, 384, 384, false, 6},
        {"a", "fc", 2048, 384, 1536, false, 6},      {"a", "fc proj", 2048, 1536, 384, false, 6},
        {"a", "head", 2048, 384, 256, true, 1},      {"b", "qkv", 1024, 768, 2304, false, 12},
        {"b", "attn proj", 1024, 768, 768, false, 12}, {"b", "fc", 1024, 768, 3072, false, 12},
        {"b", "fc proj", 1024, 3072, 768, false, 12}, {"b", "head", 1024, 768, 50304, true, 1}};
    std::vector<Layer> layers;
    std::string wanted = "," + o.layers + ",";
    std::replace(wanted.begin(), wanted.end(), '_', ' ');
    for (const auto& L : all)
        if (o.sets.find(L.set) != std::string::npos &&
            (o.layers.empty() || wanted.find("," + std::string(L.name) + ",") != std::string::npos))
            layers.push_back(L);
    if (layers.empty()) {
        usage();
        return 2;
    }

    const dnnl_version_t* v = dnnl::version();
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    std::printf("oneDNN %d.%d.%d (cpu runtime %s), effective ISA %s; OpenBLAS %s, core %s\n",
                v->major, v->minor, v->patch,
                v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other",
                isa_name(dnnl::get_effective_cpu_isa()), openblas_get_config(),
                openblas_get_corename());
    std::printf("%d rounds over all shapes per thread count, each product per round: %d timed "
                "calls per engine after %d warm-up (over 20 GFLOP: %d after %d); ms = median of "
                "the pooled calls; load average at start %.2f %.2f %.2f\n\n",
                o.rounds, o.reps, o.warmup, o.big_reps, o.big_warmup, load[0], load[1], load[2]);

    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    bool bad = false;
    for (int T : o.threads) {
        omp_set_num_threads(T);
        openblas_set_num_threads(T);
        std::vector<Row> rows;
        for (const auto& L : layers)
            for (const auto& g : products(L)) {
                Row r;
                r.L = L;
                r.g = g;
                r.gflop = 2.0 * g.m * g.n * g.k / 1e9;
                rows.push_back(r);
            }
        for (int round = 0; round < o.rounds; round++)
            for (auto& r : rows) run_fp32(eng, strm, r, o, T);

        std::printf("### %d thread%s\n\n", T, T == 1 ? "" : "s");
        std::printf("| shape | product | m×n×k | GFLOP | OpenBLAS ms | GFLOP/s | OpenBLAS "
                    "row-split ms | oneDNN ms | GFLOP/s | oneDNN impl | OpenBLAS/oneDNN | "
                    "per round | row-split/oneDNN | max rel err |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (const auto& r : rows) {
            const double mb = median(r.t_blas), mr = median(r.t_rows), md = median(r.t_dnnl);
            if (!(r.err < 1e-5)) bad = true;
            std::printf("| %s | %s | %d×%d×%d | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                        "| %s |\n",
                        shape_str(r.L).c_str(), r.g.product, r.g.m, r.g.n, r.g.k, r.gflop,
                        fmt("%.2f", mb).c_str(), fmt("%.1f", r.gflop / mb * 1e3).c_str(),
                        fmt("%.2f", mr).c_str(), fmt("%.2f", md).c_str(),
                        fmt("%.1f", r.gflop / md * 1e3).c_str(), r.impl.c_str(),
                        fmt("%.2f", mb / md).c_str(), ratio_range(r.m_blas, r.m_dnnl).c_str(),
                        fmt("%.2f", mr / md).c_str(), fmt("%.1e", r.err).c_str());
        }
        // Per training step: every layer's three products × the number of such layers.
        std::printf("\nPer training step (each layer's three products × its count per step: (a) "
                    "6 layers + head, (b) 12 layers + head; pooled medians, and the ratio's range "
                    "over the rounds):\n\n");
        std::printf("| set | OpenBLAS ms | libtrainrt way ms (row-split fwd/dinp) | oneDNN ms | "
                    "OpenBLAS/oneDNN | per round | libtrainrt way/oneDNN | per round |\n"
                    "|---|---|---|---|---|---|---|---|\n");
        for (const char* set : {"a", "b"}) {
            double sb = 0, sl = 0, sd = 0;
            std::vector<double> rb(o.rounds, 0.0), rl(o.rounds, 0.0), rd(o.rounds, 0.0);
            int n = 0;
            for (const auto& r : rows)
                if (std::string(r.L.set) == set) {
                    n++;
                    const bool split = !r.t_rows.empty();
                    sb += r.L.count * median(r.t_blas);
                    sl += r.L.count * median(split ? r.t_rows : r.t_blas);
                    sd += r.L.count * median(r.t_dnnl);
                    for (int k = 0; k < o.rounds; k++) {
                        rb[k] += r.L.count * r.m_blas[k];
                        rl[k] += r.L.count * (split ? r.m_rows[k] : r.m_blas[k]);
                        rd[k] += r.L.count * r.m_dnnl[k];
                    }
                }
            if (n)
                std::printf("| (%s) | %.1f | %.1f | %.1f | %.2f | %s | %.2f | %s |\n", set, sb, sl,
                            sd, sb / sd, ratio_range(rb, rd).c_str(), sl / sd,
                            ratio_range(rl, rd).c_str());
        }
        getloadavg(load, 3);
        std::printf("\nload average after %d thread%s: %.2f %.2f %.2f\n\n", T, T == 1 ? "" : "s",
                    load[0], load[1], load[2]);
    }

    if (o.bf16) {
        const int T = o.threads.back();
        omp_set_num_threads(T);
        openblas_set_num_threads(T);
        std::printf("### oneDNN bf16 matmul (bf16 src and weights, f32 accumulation and dst), %d "
                    "thread%s, set (a)\n\n",
                    T, T == 1 ? "" : "s");
        std::vector<Bf16Row> b;
        for (const auto& L : all)
            if (std::string(L.set) == "a")
                for (const auto& g : products(L)) b.push_back(run_bf16(eng, strm, L, g, o));
        bool same = true;
        for (const auto& r : b) same = same && r.status != "ok" && r.status == b[0].status;
        if (same) {
            std::printf("Primitive creation failed for all %zu products (fwd, dinp, dW+= of every "
                        "shape): %s\n",
                        b.size(), b[0].status.c_str());
        } else {
            std::printf("| shape | product | primitive creation | impl | oneDNN f32 ms | oneDNN "
                        "bf16 ms | f32/bf16 | rel err bf16 vs f32 |\n"
                        "|---|---|---|---|---|---|---|---|\n");
            for (const auto& r : b)
                std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n",
                            shape_str(r.L).c_str(), r.g.product, r.status.c_str(),
                            r.impl.empty() ? "—" : r.impl.c_str(), fmt("%.2f", r.ms_f32).c_str(),
                            fmt("%.2f", r.ms_bf16).c_str(),
                            fmt("%.2f", r.ms_f32 / r.ms_bf16).c_str(), fmt("%.1e", r.err).c_str());
        }
        std::printf("\n");
    }
    if (bad) {
        std::printf("ERROR: a result differs from OpenBLAS's by more than 1e-5 (relative)\n");
        return 1;
    }
    return 0;
}

#include "backend/cpu/cpu_onednn_gemm.h"

#include "core/error.h"

#ifdef TRAINRT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_threads.h"
#endif

namespace trt::cpu {

std::string describe(const GemmShape& s) {
    const char* in = s.in == DType::BF16 ? "bf16" : "fp32";
    const char* out = s.out == GemmOut::Same ? in : s.out == GemmOut::F32 ? "fp32" : "+= fp32";
    std::string d = cat(in, " ", s.m, "x", s.n, "x", s.k, " ", s.a_trans ? "aᵀ" : "a", "·",
                        s.b_trans ? "bᵀ" : "b", " -> ", out);
    if (s.bias) d += " +bias";
    if (s.alpha != 1.0f) d += cat(" alpha ", s.alpha);
    return d + cat(" (ld ", s.lda, " ", s.ldb, " ", s.ldc, ")");
}

#ifdef TRAINRT_HAVE_ONEDNN

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dt type_of(DType t) {
    TRT_CHECK(t == DType::BF16 || t == DType::F32, "oneDNN gemm: bf16 or fp32 operands only");
    return t == DType::BF16 ? dt::bf16 : dt::f32;
}

// Row-major [rows, cols] with leading dimension ld, or its transpose read in place.
dnnl::memory::desc matrix(int rows, int cols, int ld, bool trans, dt type) {
    const dims shape{rows, cols};
    return trans ? dnnl::memory::desc(shape, type, dims{1, ld})
                 : dnnl::memory::desc(shape, type, dims{ld, 1});
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, const GemmShape& s) {
    const dt in = type_of(s.in);
    const dt c_type = s.out == GemmOut::Same ? in : dt::f32;
    const auto a = matrix(s.m, s.k, s.lda, s.a_trans, in);
    const auto b = matrix(s.k, s.n, s.ldb, s.b_trans, in);
    const auto c = matrix(s.m, s.n, s.ldc, false, c_type);
    dnnl::primitive_attr attr;
    // Each thread passes its own scratchpad: one primitive runs on several threads at once.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // alpha scales the accumulated product, before the sum post-op adds C's old value.
    if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
    if (s.out == GemmOut::F32Add) {  // C += A·B: the sum post-op reads C before it is written
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
    }
    if (s.bias) {
        const dnnl::memory::desc bias({1, s.n}, dt::f32, dims{s.n, 1});
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), attr, eng);
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, eng);
}

// The implementation oneDNN picks for a product the size of a small model's layer, or why
// there is none. Probed once per operand type and process.
std::pair<std::string, std::string> probe(DType in) {
    const SerialLibrariesScope serial;  // as the blocks run: single-threaded
    try {
        const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
        GemmShape s;
        s.in = in;
        s.m = 512, s.n = 256, s.k = 256, s.lda = 256, s.ldb = 256, s.ldc = 256;
        return {std::string(), std::string(make_pd(eng, s).impl_info_str())};
    } catch (const dnnl::error& e) {
        return {cat("oneDNN ", dnnl_version()->major, ".", dnnl_version()->minor, " has no ",
                    in == DType::BF16 ? "bf16" : "fp32", " matmul for this CPU (",
                    in == DType::BF16 ? "it needs AVX-512; " : "", e.what(), ")"),
                std::string()};
    }
}

}  // namespace

struct OnednnGemm::Impl {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    using Key = std::tuple<DType, int, int, int, int, int, int, bool, bool, GemmOut, bool, float>;
    struct Entry {
        dnnl::matmul::primitive_desc pd;
        dnnl::matmul prim;
        // Each slot's arguments (bind; the data handles set per call). Mutable: each slot's
        // own, touched only by the thread running as that slot.
        mutable std::vector<std::unordered_map<int, dnnl::memory>> bound;
    };
    // A handful of block shapes per linear layer; attention's (prepare): up to 2·T/64 per
    // product and sequence length. Kept for the backend's life: a run repeats its shapes.
    std::map<Key, Entry> cache;
    struct Slot {                // one per thread of a product: a stream and a scratchpad
        dnnl::stream strm;
        std::vector<uint8_t> scratch;
    };
    std::vector<Slot> slots;

    // At least `threads` slots, each with a scratchpad of at least `bytes`.
    void grow_slots(int threads, size_t bytes) {
        while ((int)slots.size() < std::max(1, threads))
            slots.push_back(Slot{dnnl::stream(eng), {}});
        for (auto& slot : slots)
            if (slot.scratch.size() < bytes) slot.scratch.resize(bytes);
    }
    // e's arguments for slots [0, threads), with no data yet (a bias slot where e has one):
    // made before a loop, so that a product of a few microseconds does not spend a fifth of
    // it making memory objects.
    void bind(Entry& e, int threads) {
        const bool bias = e.pd.bias_desc().get_size() > 0;
        while ((int)e.bound.size() < std::max(1, threads)) {
            auto none = [&](const dnnl::memory::desc& d) {
                return dnnl::memory(d, eng, DNNL_MEMORY_NONE);
            };
            std::unordered_map<int, dnnl::memory> args{
                {DNNL_ARG_SRC, none(e.pd.src_desc())},
                {DNNL_ARG_WEIGHTS, none(e.pd.weights_desc())},
                {DNNL_ARG_DST, none(e.pd.dst_desc())},
                {DNNL_ARG_SCRATCHPAD, none(e.pd.scratchpad_desc())}};
            if (bias) args.emplace(DNNL_ARG_BIAS, none(e.pd.bias_desc()));
            e.bound.push_back(std::move(args));
        }
    }
    // Runs a made and bound primitive on the calling thread as slot `slot`.
    void execute(const Entry& e, int slot, const void* a, const void* b, void* c,
                 const float* bias = nullptr) {
        TRT_CHECK(slot < (int)e.bound.size(), "oneDNN gemm: a shape not prepared for slot ", slot);
        auto& args = e.bound[slot];
        Slot& sl = slots[slot];
        args.at(DNNL_ARG_SRC).set_data_handle(const_cast<void*>(a));
        args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(b));
        args.at(DNNL_ARG_DST).set_data_handle(c);
        args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(sl.scratch.data());
        if (bias) args.at(DNNL_ARG_BIAS).set_data_handle(const_cast<float*>(bias));
        e.prim.execute(sl.strm, args);
        sl.strm.wait();
    }

    static Key key_of(const GemmShape& s) {
        return Key{s.in,  s.m,       s.n,       s.k,   s.lda,  s.ldb,
                   s.ldc, s.a_trans, s.b_trans, s.out, s.bias, s.alpha};
    }
    // The primitive for a block shape, made on first use (on the calling thread only).
    Entry& entry(const GemmShape& s) {
        const Key key = key_of(s);
        auto it = cache.find(key);
        if (it == cache.end()) {
            auto pd = make_pd(eng, s);
            dnnl::matmul prim(pd);
            it = cache.emplace(key, Entry{pd, prim, {}}).first;
        }
        return it->second;
    }
    // One made before the parallel part: a lookup only, safe from any thread.
    const Entry& made(const GemmShape& s) const {
        const auto it = cache.find(key_of(s));
        TRT_CHECK(it != cache.end(), "oneDNN gemm: a block shape without its primitive");
        return it->second;
    }
};

std::string OnednnGemm::availability(DType in, std::string* impl) {
    static const auto bf16 = probe(DType::BF16);
    static const auto f32 = probe(DType::F32);
    const auto& p = in == DType::BF16 ? bf16 : f32;
    if (impl) *impl = p.second;
    return p.first;
}

std::string OnednnGemm::implementation(const GemmShape& s) {
    const SerialLibrariesScope serial;
    try {
        const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
        return make_pd(eng, s).impl_info_str();
    } catch (const dnnl::error& e) {
        return cat("none: ", e.what());
    } catch (const Error& e) {
        return cat("none: ", e.what());
    }
}

bool OnednnGemm::fast(DType in, const std::string& impl) {
    if (in == DType::BF16)
        return impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos;
    return impl.rfind("brg:", 0) == 0;
}

OnednnGemm::OnednnGemm() : impl_(std::make_unique<Impl>()) {}
OnednnGemm::~OnednnGemm() = default;

// The product is cut into blocks of C's rows (or of its columns, when it has fewer rows than
// columns: a weight gradient's), each one single-threaded oneDNN primitive, run over our
// threads (cpu_pool.h): the same split as the OpenBLAS kernels (cpu_matmul.cpp), so a thread
// parked beside other work delays a block, not its share. Every block does the whole k sum.
void OnednnGemm::run(const GemmShape& s, const void* a, const void* b, void* c,
                     const float* bias, int threads) {
    TRT_CHECK(s.m > 0 && s.n > 0 && s.k > 0, "oneDNN gemm of an empty shape");
    TRT_CHECK(!(s.bias && s.out == GemmOut::F32Add), "oneDNN gemm: a bias with C +=");
    TRT_CHECK(!s.bias || bias, "oneDNN gemm: the bias pointer is null");
    constexpr int kBlocksPerThread = 2, kMinBlock = 32;
    const bool by_rows = s.m >= s.n;
    const int extent = by_rows ? s.m : s.n;
    const int parts = std::max(1, std::min(std::max(1, threads) * kBlocksPerThread,
                                           extent / kMinBlock));
    const size_t in_size = s.in == DType::BF16 ? 2 : 4;
    const size_t c_size = s.out == GemmOut::Same ? in_size : 4;
    const auto* a_bytes = static_cast<const uint8_t*>(a);
    const auto* b_bytes = static_cast<const uint8_t*>(b);
    auto* c_bytes = static_cast<uint8_t*>(c);
    // Block `part`: its shape and operands.
    struct Block {
        GemmShape s;
        const void *a, *b;
        void* c;
        const float* bias;
    };
    // Column blocks start on 16-column boundaries (64 bytes of fp32 output): no two blocks
    // write one cache line of a row, and each block's stores stay aligned as the row's are.
    constexpr size_t kColumnAlign = 16;
    auto block = [&](int part) {
        size_t lo, hi;
        if (by_rows) {
            split_range((size_t)extent, (size_t)parts, (size_t)part, &lo, &hi);
        } else {
            const size_t units = ((size_t)extent + kColumnAlign - 1) / kColumnAlign;
            split_range(units, (size_t)parts, (size_t)part, &lo, &hi);
            lo *= kColumnAlign;
            hi = std::min((size_t)extent, hi * kColumnAlign);
        }
        Block blk{s, a, b, c, bias};
        if (by_rows) {  // rows [lo, hi) of op(A) and C
            blk.s.m = (int)(hi - lo);
            blk.a = a_bytes + (s.a_trans ? lo : lo * s.lda) * in_size;
            blk.c = c_bytes + lo * s.ldc * c_size;
        } else {  // columns [lo, hi) of op(B), C and the bias
            blk.s.n = (int)(hi - lo);
            blk.b = b_bytes + (s.b_trans ? lo * s.ldb : lo) * in_size;
            blk.c = c_bytes + lo * c_size;
            if (bias) blk.bias = bias + lo;
        }
        return blk;
    };
    const SerialLibrariesScope serial;  // each block single-threaded, on any thread
    try {
        // Primitives (at most three block shapes) and per-thread streams and scratchpads are
        // made here, before the threads start: the cache is not shared between threads.
        const int team = std::min(parts, std::max(1, threads));
        size_t scratch = 0;
        for (int part = 0; part < parts; ++part) {  // every block shape (at most three)
            Impl::Entry& e = impl_->entry(block(part).s);
            scratch = std::max(scratch, e.pd.scratchpad_desc().get_size());
            impl_->bind(e, threads);
        }
        // (Slots for `threads`: inside another loop's part, a block runs in that part's slot.)
        impl_->grow_slots(threads, scratch);
        // (A block's dnnl::error comes back from run_parts, cpu_pool.h, to the catch below.)
        run_parts((size_t)parts, team, [&](size_t part, int slot) {
            const Block blk = block((int)part);
            impl_->execute(impl_->made(blk.s), slot, blk.a, blk.b, blk.c,
                           blk.s.bias ? blk.bias : nullptr);
        });
    } catch (const dnnl::error& e) {
        fail(Status::Internal, "oneDNN ", s.in == DType::BF16 ? "bf16" : "fp32", " matmul ", s.m,
             "x", s.n, "x", s.k, " failed: ", e.what());
    }
}

void OnednnGemm::prepare(const GemmShape& s, int threads) {
    TRT_CHECK(s.m > 0 && s.n > 0 && s.k > 0 && !s.bias, "oneDNN gemm: prepare ", s.m, "x", s.n, "x",
              s.k, s.bias ? " with a bias" : "");
    const SerialLibrariesScope serial;  // as run_here runs it
    try {
        Impl::Entry& e = impl_->entry(s);
        impl_->grow_slots(threads, e.pd.scratchpad_desc().get_size());
        impl_->bind(e, threads);
    } catch (const dnnl::error& e) {
        fail(Status::Internal, "oneDNN matmul ", s.m, "x", s.n, "x", s.k,
             " could not be made: ", e.what());
    }
}

void OnednnGemm::run_here(const GemmShape& s, const void* a, const void* b, void* c,
                          int slot) const {
    TRT_CHECK(slot >= 0 && slot < (int)impl_->slots.size(), "oneDNN gemm: slot ", slot,
              " was not prepared");
    try {
        impl_->execute(impl_->made(s), slot, a, b, c);
    } catch (const dnnl::error& e) {
        fail(Status::Internal, "oneDNN matmul ", s.m, "x", s.n, "x", s.k, " failed: ", e.what());
    }
}

std::vector<OnednnGemm::MadeShape> OnednnGemm::made_shapes() const {
    std::vector<MadeShape> out;
    for (const auto& [key, e] : impl_->cache) {
        GemmShape s;
        std::tie(s.in, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.a_trans, s.b_trans, s.out, s.bias,
                 s.alpha) = key;
        out.push_back({s, e.pd.impl_info_str(), e.pd.scratchpad_desc().get_size()});
    }
    return out;
}

bool onednn_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                  int lda, const float* B, int ldb, float beta, float* C, int ldc) noexcept {
    return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                      beta, C, ldc) == dnnl_success;
}

#else  // no oneDNN in this build

bool onednn_sgemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                  float*, int) noexcept {
    return false;
}

struct OnednnGemm::Impl {};

std::string OnednnGemm::availability(DType, std::string* impl) {
    if (impl) impl->clear();
    return "this build has no oneDNN (configure with -DTRAINRT_ONEDNN=ON and libdnnl-dev)";
}
bool OnednnGemm::fast(DType, const std::string&) { return false; }
std::string OnednnGemm::implementation(const GemmShape&) { return "none: no oneDNN in this build"; }
OnednnGemm::OnednnGemm() = default;
OnednnGemm::~OnednnGemm() = default;
void OnednnGemm::run(const GemmShape&, const void*, const void*, void*, const float*, int) {
    fail(Status::Unsupported, availability(DType::F32));
}
void OnednnGemm::prepare(const GemmShape&, int) {
    fail(Status::Unsupported, availability(DType::F32));
}
void OnednnGemm::run_here(const GemmShape&, const void*, const void*, void*, int) const {
    fail(Status::Unsupported, availability(DType::F32));
}
std::vector<OnednnGemm::MadeShape> OnednnGemm::made_shapes() const { return {}; }

#endif

}  // namespace trt::cpu

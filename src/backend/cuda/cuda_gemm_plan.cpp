// A RowMajorGemm (cuda_gemm.h) on cuBLASLt: its plan (descriptor, layouts, algorithm) built
// once per key and cached in MatmulState; run_gemm.
//
// Row-major on a column-major library. A row-major X stored [r,c] with row stride ld is the
// column-major Xᵀ [c,r] with the same ld, so the row-major product C[m,n] = op(A)·op(B) is
// the column-major Cᵀ[n,m] = op(B)ᵀ·op(A)ᵀ: cuBLASLt gets A' = B, B' = A with the *same*
// transpose flags, m' = n, n' = m, k' = k, and every ld unchanged; D (= C) is column-major
// [m', n'] with ld = ldc. describe_gemm is the only place this view is derived (plus the
// operand order of the cublasLtMatmul call and lt_alignments, which name A' and B').
//
// Epilogues in cuBLASLt's terms (lt_epilogue):
//   Bias       bias[n] is one value per row of the column-major D[m' = n, n' = m]:
//              CUBLASLT_EPILOGUE_BIAS.
//   GeluAux    aux [m, n] row-major = [n, m] column-major, same ld, D's type (the default,
//              never set): CUBLASLT_EPILOGUE_GELU_AUX_BIAS (GELU_AUX without a bias).
//   BiasGradA  sums over k of row-major op(A)[m, k] = Lt op(B')[k, n' = m]: BGRADB.
//   BiasGradB  sums over k of row-major op(B)[k, n] = Lt op(A')[m' = n, k]: BGRADA.
// A bias is fp32 with an fp32 D; with a bf16/fp16 D it is the low-precision operand (cuBLASLt
// 13.1 refuses an fp32 bias there, INVALID_VALUE on an H100). The bias gradient and the aux
// matrix keep their default: D's type. A plan is cached per (shape, epilogue, alignments); when
// the heuristic has no algorithm for the epilogue, or the first cublasLtMatmul with it says
// NOT_SUPPORTED / INVALID_VALUE, the plan is kept as "rejected" and run_gemm returns false for
// that shape from then on (the caller's fallback; never a failed step).
//
// Precision (RowMajorGemm::precision): Fp32 = everything CUDA_R_32F, CUBLAS_COMPUTE_32F; Tf32 =
// the same types, CUBLAS_COMPUTE_32F_FAST_TF32; Bf16/Fp16 = A and B in CUDA_R_16BF/CUDA_R_16F,
// CUBLAS_COMPUTE_32F, scale type fp32; C/D in c_type (fp32, or bf16/fp16: D rounds the fp32
// accumulator once).
//
// Determinism: one algorithm per distinct problem, chosen by cublasLtMatmulAlgoGetHeuristic
// on first use (a host call; no device sync) and cached with its descriptors in MatmulState,
// keyed by everything the heuristic sees: shape, transposes, lds, batch and strides, types,
// compute type, epilogue, and the alignment of every operand (its pointer, lowered by odd
// lds/strides; also what the heuristic is told to assume). The heuristic only offers
// algorithms that fit ctx.lt_workspace_bytes (the whole workspace is passed on every call, so
// the choice never depends on what else ran). cuBLASLt's split-K reduction schemes are all
// fixed-order (INPLACE serialises the partial sums with counters in the workspace;
// COMPUTE_TYPE / OUTPUT_TYPE reduce in a separate pass) and there is no atomics-based scheme
// in cuBLAS 13, so every scheme is allowed (kReductionSchemes: one place to narrow it). With
// one stream and a workspace owned by the caller, cuBLAS documents bitwise-identical results
// run to run for a given toolkit, architecture and SM count. That covers the epilogues too:
// the bias gradient is reduced inside cublasLtMatmul (no atomics mode exists in cuBLASLt, and
// a split-K algorithm reduces with one of the fixed-order schemes above).
// tests/gpu/cuda_epilogue_test.cpp checks every epilogue bitwise run to run.
//
// Threading: MatmulState is used from the backend's one host thread at a time (like the
// backend itself); the epilogue pointers are set on the cached descriptor per call.
#include "backend/cuda/cuda_gemm_plan.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "core/error.h"

namespace trt::cuda {

struct MatmulState {
    std::map<GemmPlanKey, GemmPlan> plans;
    // Per epilogue family (epilogue_family()): shapes that run it fused / that fell back.
    std::array<int, 3> fused{}, fell_back{};

    ~MatmulState() {
        for (auto& kv : plans) destroy_plan(kv.second);
    }
};

MatmulState* create_matmul_state() { return new MatmulState(); }
void destroy_matmul_state(MatmulState* s) { delete s; }

std::string matmul_epilogue_note(const MatmulState* s) {
    if (!s) return "";
    static const char* const kFamily[3] = {"bias", "gelu", "bias-grad"};
    std::string out;
    for (int f = 0; f < 3; f++) {
        if (s->fused[f] == 0 && s->fell_back[f] == 0) continue;
        if (!out.empty()) out += ", ";
        out += std::string(kFamily[f]) + " " + std::to_string(s->fused[f]) + " fused / " +
               std::to_string(s->fell_back[f]) + " fallback";
    }
    return out.empty() ? out : "cuBLASLt epilogue shapes: " + out;
}

std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
    struct Field {
        cublasLtMatmulAlgoConfigAttributes_t attr;
        const char* name;
    };
    static const Field kFields[] = {
        {CUBLASLT_ALGO_CONFIG_ID, "id"},
        {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile"},
        {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages"},
        {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "split-k"},
        {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "reduction"},
        {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "swizzle"},
        {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "custom"},
    };
    std::string out;
    for (const Field& f : kFields) {
        // Every one of these is a 32-bit integer (int32 or uint32, cublasLt.h).
        uint32_t v = 0;
        size_t written = 0;
        const cublasStatus_t st =
            cublasLtMatmulAlgoConfigGetAttribute(&algo, f.attr, &v, sizeof(v), &written);
        if (!out.empty()) out += ' ';
        out += std::string(f.name) + ' ' + (st == CUBLAS_STATUS_SUCCESS ? std::to_string(v) : "?");
    }
    return out;
}

std::string describe_key(const GemmPlanKey& k) {
    // The key's order: gemm_plan_key below.
    auto type = [](int64_t t) {
        return t == CUDA_R_16BF  ? "bf16"
               : t == CUDA_R_16F ? "fp16"
               : t == CUDA_R_32F ? "fp32"
                                 : "?";
    };
    auto epilogue = [](int64_t e) -> const char* {
        switch (static_cast<cublasLtEpilogue_t>(e)) {
            case CUBLASLT_EPILOGUE_DEFAULT:
                return "";
            case CUBLASLT_EPILOGUE_BIAS:
                return " +bias";
            case CUBLASLT_EPILOGUE_GELU_AUX:
                return " +gelu";
            case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
                return " +bias+gelu";
            case CUBLASLT_EPILOGUE_BGRADA:
            case CUBLASLT_EPILOGUE_BGRADB:
                return " +bias-grad";
            default:
                return " +epilogue";
        }
    };
    std::string d = std::to_string(k[2]) + "x" + std::to_string(k[3]) + "x" + std::to_string(k[4]);
    if (k[11] > 1) d += " batch " + std::to_string(k[11]);
    d += std::string(" ") + (k[0] ? "aᵀ" : "a") + "·" + (k[1] ? "bᵀ" : "b") + " " + type(k[12]) +
         " -> " + type(k[13]);
    if (k[14] == CUBLAS_COMPUTE_32F_FAST_TF32) d += " tf32";
    return d + epilogue(k[15]) + (k[23] ? "" : " +=");
}

std::vector<OpChoice> matmul_choices(const MatmulState* s) {
    std::vector<OpChoice> out;
    if (!s) return out;
    for (const auto& [key, plan] : s->plans)
        out.push_back(
            {"matmul (cuBLASLt)", describe_key(key),
             plan.rejected ? "falls back: no algorithm for the epilogue" : describe_algo(plan.algo),
             static_cast<int64_t>(plan.workspace)});
    return out;
}

void destroy_plan(GemmPlan& p) noexcept {  // statuses ignored: nothing to do on failure
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.d) cublasLtMatrixLayoutDestroy(p.d);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
    p = GemmPlan{};
}

namespace {

// Allowed split-K reduction schemes: all of them are deterministic (see the file comment).
constexpr uint32_t kReductionSchemes = CUBLASLT_REDUCTION_SCHEME_MASK;

// ---- types in cuBLASLt's terms
cudaDataType_t lt_type(DType d) {  // an activation dtype (F32, BF16, F16)
    return d == DType::BF16 ? CUDA_R_16BF : d == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
}
cudaDataType_t operand_type(Precision p) {  // A's and B's
    return p == Precision::Bf16 ? CUDA_R_16BF : p == Precision::Fp16 ? CUDA_R_16F : CUDA_R_32F;
}
cublasComputeType_t compute_type(Precision p) {
    return p == Precision::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
size_t operand_bytes(Precision p) { return lowp_precision(p) ? 2 : 4; }

// ---- alignments
// Largest power of two (<= 256) dividing x (0: 256).
uint32_t pow2_alignment(uint64_t x) {
    uint32_t al = 256;
    while (al > 1 && (x & (al - 1)) != 0) al >>= 1;
    return al;
}
uint32_t alignment_of(const void* p) { return pow2_alignment(reinterpret_cast<uintptr_t>(p)); }

// What the heuristic may assume about every row (and batch) start of an operand: the base
// pointer's alignment, lowered by that of the ld and batch stride in bytes, so an odd ld or
// stride can never reach a vectorised kernel that needs more.
uint32_t operand_alignment(const void* p, int64_t ld, int batch, int64_t stride, size_t elem) {
    uint32_t al = std::min(alignment_of(p), pow2_alignment(static_cast<uint64_t>(ld) * elem));
    if (batch > 1) al = std::min(al, pow2_alignment(static_cast<uint64_t>(stride) * elem));
    return al;
}
uint32_t align_a(const RowMajorGemm& g) {
    return operand_alignment(g.a, g.lda, g.batch, g.stride_a, operand_bytes(g.precision));
}
uint32_t align_b(const RowMajorGemm& g) {
    return operand_alignment(g.b, g.ldb, g.batch, g.stride_b, operand_bytes(g.precision));
}
uint32_t align_c(const RowMajorGemm& g) {
    return operand_alignment(g.c, g.ldc, g.batch, g.stride_c, float_dtype_size(g.c_type));
}

// ---- epilogues in cuBLASLt's terms
bool epilogue_reads_bias(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool epilogue_writes_bgrad(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}
bool epilogue_writes_aux(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
// Index into MatmulState::fused / fell_back: 0 bias, 1 gelu, 2 bias gradient.
int epilogue_family(cublasLtEpilogue_t e) {
    return epilogue_writes_aux(e) ? 1 : epilogue_writes_bgrad(e) ? 2 : 0;
}

// The epilogue's vector (bias in, bias gradient out), or null.
const void* epilogue_vector(const RowMajorGemm& g) {
    const cublasLtEpilogue_t e = lt_epilogue(g);
    if (epilogue_reads_bias(e)) return g.bias;
    if (epilogue_writes_bgrad(e)) return g.bgrad;
    return nullptr;
}
// The aux matrix (GELU input) when the epilogue writes one, or null.
void* epilogue_aux(const RowMajorGemm& g) {
    return epilogue_writes_aux(lt_epilogue(g)) ? g.aux : nullptr;
}
uint32_t align_aux(const RowMajorGemm& g) {  // aux has C's type (cuBLASLt's default)
    void* aux = epilogue_aux(g);
    return aux ? operand_alignment(aux, g.aux_ld, 1, 0, float_dtype_size(g.c_type)) : 0;
}

// *out = a [rows, cols] column-major layout of type t (strided batch when batch > 1).
void make_layout(cublasLtMatrixLayout_t* out, cudaDataType_t t, int64_t rows, int64_t cols,
                 int64_t ld, int batch, int64_t stride) {
    TRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(out, t, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(cols), ld));
    if (batch > 1) {
        const int32_t count = batch;
        TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
        TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
}

// The per-call pointers of g's epilogue (the cached descriptor is shared by every call with
// the same key; the heuristic saw pointers of the same alignment).
void set_epilogue_pointers(cublasLtMatmulDesc_t desc, const RowMajorGemm& g) {
    if (const void* vec = epilogue_vector(g))
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &vec, sizeof(vec)));
    if (epilogue_writes_aux(lt_epilogue(g))) {
        const void* aux = g.aux;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    }
}

void configure_epilogue(cublasLtMatmulDesc_t desc, const RowMajorGemm& g) {
    const cublasLtEpilogue_t epilogue = lt_epilogue(g);
    const uint32_t e = static_cast<uint32_t>(epilogue);
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    if (epilogue_reads_bias(epilogue)) {  // fp32, or D's low precision (file comment)
        const int32_t bias_type = lt_type(g.bias_type);
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    }
    if (epilogue_writes_aux(epilogue)) {
        const int64_t ld = g.aux_ld;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                        &ld, sizeof(ld)));
    }
    set_epilogue_pointers(desc, g);
}

// Owns a plan's descriptors until release(): destroys whatever was created if a check
// throws, or the plan is rejected.
struct PlanGuard {
    GemmPlan* p;
    ~PlanGuard() {
        if (p) destroy_plan(*p);
    }
};

// Builds the descriptors and asks the heuristic for its best algorithm (first use of a key).
// A plan whose epilogue has no algorithm comes back rejected (no descriptors); a plain GEMM
// without an algorithm is an error.
GemmPlan build_plan(const CudaCtx& ctx, const RowMajorGemm& g) {
    GemmPlan p = describe_gemm(g);
    PlanGuard guard{&p};

    cublasLtMatmulPreference_t pref = nullptr;
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    struct PrefGuard {
        cublasLtMatmulPreference_t p;
        ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
    } pref_guard{pref};
    const uint64_t ws = ctx.lt_workspace ? ctx.lt_workspace_bytes : 0;
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &kReductionSchemes,
        sizeof(kReductionSchemes)));
    // The default assumes 256-byte aligned pointers; views into larger buffers (per-layer
    // weights, attention's batched slices) can be less aligned, so say what they are.
    const std::array<uint32_t, 4> al = lt_alignments(g);
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        TRT_CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof(al[i])));

    cublasLtMatmulHeuristicResult_t res{};
    int count = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.lt, p.desc, p.a, p.b, p.d, p.d,
                                                             pref, 1, &res, &count);
    // An epilogue cuBLASLt does not take at these types (an fp32 bias with a bf16 D, seen on
    // an H100 with cuBLASLt 13.1) is refused as INVALID_VALUE rather than NOT_SUPPORTED: for
    // an epilogue plan both mean "fall back"; for a plain GEMM both are errors.
    const bool with_epilogue = g.epilogue != GemmEpilogue::None;
    const bool refused = st == CUBLAS_STATUS_NOT_SUPPORTED ||
                         (st == CUBLAS_STATUS_INVALID_VALUE && with_epilogue);
    if (st != CUBLAS_STATUS_SUCCESS && !refused)
        cublas_fail(st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
    if (st != CUBLAS_STATUS_SUCCESS || count < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        if (!with_epilogue)  // cuBLASLt's m' x n' x k' (file comment)
            fail(Status::Device, "cuBLASLt has no algorithm for a ", g.n, "x", g.m, "x", g.k,
                 " GEMM (batch ", g.batch, ", operand type ",
                 static_cast<int>(operand_type(g.precision)), ", workspace ", ws, " bytes)");
        GemmPlan rejected;  // the guard destroys p's descriptors
        rejected.rejected = true;
        return rejected;
    }
    p.algo = res.algo;
    p.workspace = res.workspaceSize;
    guard.p = nullptr;  // success: the cache owns the descriptors
    return p;
}

}  // namespace

cublasLtEpilogue_t lt_epilogue(const RowMajorGemm& g) {
    switch (g.epilogue) {
        case GemmEpilogue::None: break;
        case GemmEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
        case GemmEpilogue::GeluAux:
            return g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        case GemmEpilogue::BiasGradA: return CUBLASLT_EPILOGUE_BGRADB;  // row-major A is B'
        case GemmEpilogue::BiasGradB: return CUBLASLT_EPILOGUE_BGRADA;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

std::array<uint32_t, 4> lt_alignments(const RowMajorGemm& g) {
    return {align_b(g), align_a(g), align_c(g), align_c(g)};
}

GemmPlanKey gemm_plan_key(const RowMajorGemm& g) {
    const bool batched = g.batch > 1;
    const cublasLtEpilogue_t epilogue = lt_epilogue(g);
    const void* vec = epilogue_vector(g);
    return {g.trans_a,
            g.trans_b,
            g.m,
            g.n,
            g.k,
            g.lda,
            g.ldb,
            g.ldc,
            batched ? g.stride_a : 0,
            batched ? g.stride_b : 0,
            batched ? g.stride_c : 0,
            g.batch,
            static_cast<int64_t>(operand_type(g.precision)),
            static_cast<int64_t>(lt_type(g.c_type)),
            static_cast<int64_t>(compute_type(g.precision)),
            static_cast<int64_t>(epilogue),
            static_cast<int64_t>(epilogue_reads_bias(epilogue) ? lt_type(g.bias_type)
                                                               : CUDA_R_32F),
            align_a(g),
            align_b(g),
            align_c(g),
            vec ? alignment_of(vec) : 0,
            align_aux(g),
            epilogue_aux(g) ? g.aux_ld : 0,
            g.beta == 0.0f};
}

GemmPlan describe_gemm(const RowMajorGemm& g) {
    GemmPlan p;
    PlanGuard guard{&p};
    TRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, compute_type(g.precision), CUDA_R_32F));
    // The swap (file comment): A' = B, B' = A, same transposes; m' = n, n' = m.
    const int32_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    // Stored column-major shapes: A' = B is [n, k] ([k, n] transposed), B' = A is [k, m]
    // ([m, k] transposed), D = C is [n, m].
    const cudaDataType_t ab = operand_type(g.precision);
    make_layout(&p.a, ab, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb, g.batch,
                g.stride_b);
    make_layout(&p.b, ab, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda, g.batch,
                g.stride_a);
    make_layout(&p.d, lt_type(g.c_type), g.n, g.m, g.ldc, g.batch, g.stride_c);
    if (g.epilogue != GemmEpilogue::None) configure_epilogue(p.desc, g);
    guard.p = nullptr;
    return p;
}

bool run_gemm(const CudaCtx& ctx, const RowMajorGemm& g) {
    TRT_CHECK(ctx.matmul != nullptr && ctx.lt != nullptr, "the CUDA context has no cuBLASLt");
    const bool with_epilogue = g.epilogue != GemmEpilogue::None;
    TRT_CHECK(!with_epilogue || g.batch == 1, "an epilogue with a batched GEMM");
    MatmulState& state = *ctx.matmul;
    const GemmPlanKey key = gemm_plan_key(g);
    auto it = state.plans.find(key);
    const int family = epilogue_family(lt_epilogue(g));
    if (it == state.plans.end()) {
        it = state.plans.emplace(key, build_plan(ctx, g)).first;
        if (with_epilogue) (it->second.rejected ? state.fell_back : state.fused)[family]++;
    }
    GemmPlan& p = it->second;
    if (p.rejected) return false;
    if (with_epilogue) set_epilogue_pointers(p.desc, g);
    const float alpha = g.alpha, beta = g.beta;
    // cuBLASLt's A' is g's B and its B' g's A (file comment).
    const cublasStatus_t st =
        cublasLtMatmul(ctx.lt, p.desc, &alpha, g.b, p.a, g.a, p.b, &beta, g.c, p.d, g.c, p.d,
                       &p.algo, ctx.lt_workspace, ctx.lt_workspace ? ctx.lt_workspace_bytes : 0,
                       ctx.stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
        // An epilogue the heuristic offered but whose first call is refused up front (argument
        // checks, before any launch): this shape falls back from now on.
        const bool refused = st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE;
        if (with_epilogue && !p.ran && refused) {
            destroy_plan(p);
            p.rejected = true;
            state.fused[family]--;
            state.fell_back[family]++;
            return false;
        }
        cublas_fail(st, "cublasLtMatmul", __FILE__, __LINE__);
    }
    p.ran = true;
    return true;
}

}  // namespace trt::cuda

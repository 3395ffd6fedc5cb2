#include "runtime/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace trt {
namespace {

// ZeRO-1's cut points: near k·n/world, moved to a multiple of kQ8Block from the start of the
// run (ranges adjacent in both buffers: one int8 update) the point falls in.
template <typename RangeT>
std::vector<size_t> shard_cut_points(const std::vector<RangeT>& ranges, size_t n, int world) {
    std::vector<size_t> run_start(1, 0);  // compact offsets where runs start; ranges tile [0, n)
    for (size_t i = 0; i < ranges.size(); ++i) {
        TRT_CHECK(ranges[i].grad_offset == (i ? ranges[i - 1].grad_offset + ranges[i - 1].numel : 0),
                  "AdamW: the trainable ranges do not tile the gradient buffer");
        if (i > 0 && ranges[i - 1].offset + ranges[i - 1].numel != ranges[i].offset)
            run_start.push_back(ranges[i].grad_offset);
    }
    std::vector<size_t> bounds(static_cast<size_t>(world) + 1, n);
    bounds[0] = 0;
    for (int k = 1; k < world; ++k) {
        const size_t target = n * static_cast<size_t>(k) / static_cast<size_t>(world);
        const auto after = std::upper_bound(run_start.begin(), run_start.end(), target);
        const size_t start = *(after - 1), next = after == run_start.end() ? n : *after;
        size_t cut = start + (target - start + kQ8Block / 2) / kQ8Block * kQ8Block;
        cut = std::min(cut, next);
        bounds[static_cast<size_t>(k)] = std::max(cut, bounds[static_cast<size_t>(k) - 1]);
    }
    return bounds;
}

}  // namespace

AdamW::AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
             bool dynamic_loss_scale, bool fused, ZeroShard shard)
    : be_(backend), table_(table), config_(config), fused_(fused) {
    policy_.dynamic = dynamic_loss_scale;
    // Decay only tensors with >= 2 dims (the table interleaves them with biases/LN params):
    // one segment per tensor, so the fused update is one pass over a run. A vocab matrix's
    // padding rows are a segment of their own without decay (zero gradient, so they stay 0).
    const float wd = static_cast<float>(config_.weight_decay);
    for (const ParamTensor& t : table_.tensors()) {
        if (!t.trainable) continue;
        all_ranges_.push_back({t.offset, t.grad_offset, t.numel, t.decay ? wd : 0.0f});
        if (t.padding > 0)
            all_ranges_.push_back({t.offset + t.numel, t.grad_offset + t.numel, t.padding, 0.0f});
    }
    TRT_CHECK(shard.world >= 1 && shard.rank >= 0 && shard.rank < shard.world, "AdamW: rank ",
              shard.rank, " of ", shard.world);
    bounds_ = shard_cut_points(all_ranges_, table_.grad_total(), shard.world);
    lo_ = bounds_[static_cast<size_t>(shard.rank)];
    hi_ = bounds_[static_cast<size_t>(shard.rank) + 1];
    for (const Range& r : all_ranges_) {  // this shard's part of each range
        const size_t a = std::max(lo_, r.grad_offset), b = std::min(hi_, r.grad_offset + r.numel);
        if (a < b) ranges_.push_back({r.offset + (a - r.grad_offset), a, b - a, r.decay});
    }
    const size_t n = hi_ - lo_;
    // Runs: a range continues the run when it follows it in both buffers.
    std::vector<int64_t> ends, numel;
    std::vector<float> decay;
    std::vector<size_t> run_first;  // index of each run's first range
    for (size_t i = 0; i < ranges_.size(); ++i) {
        const Range& r = ranges_[i];
        const bool joins = !runs_.empty() &&
                           runs_.back().offset + runs_.back().numel == r.offset &&
                           runs_.back().grad_offset + runs_.back().numel == r.grad_offset;
        if (!joins) {
            runs_.push_back({r.offset, r.grad_offset, 0, ParamSegments{}});
            run_first.push_back(i);
        }
        runs_.back().numel += r.numel;
        ends.push_back(static_cast<int64_t>(runs_.back().numel));
        numel.push_back(static_cast<int64_t>(r.numel));
        decay.push_back(r.decay);
    }
    // (At least one entry each: an empty ZeRO-1 shard has no ranges.)
    segment_ends_ = be_.alloc(std::max<size_t>(1, ends.size()) * sizeof(int64_t), "AdamW segment table");
    segment_decay_ = be_.alloc(std::max<size_t>(1, decay.size()) * sizeof(float), "AdamW segment table");
    be_.copy_to_device(segment_ends_, ends.data(), ends.size() * sizeof(int64_t));
    be_.copy_to_device(segment_decay_, decay.data(), decay.size() * sizeof(float));
    for (size_t k = 0; k < runs_.size(); ++k) {
        const size_t first = run_first[k];
        const size_t last = k + 1 < runs_.size() ? run_first[k + 1] : ranges_.size();
        runs_[k].segments.ends = static_cast<const int64_t*>(segment_ends_) + first;
        runs_[k].segments.weight_decay = static_cast<const float*>(segment_decay_) + first;
        runs_[k].segments.count = static_cast<int32_t>(last - first);
    }
    tensor_numel_ = be_.alloc(std::max<size_t>(1, numel.size()) * sizeof(int64_t), "AdamW segment table");
    be_.copy_to_device(tensor_numel_, numel.data(), numel.size() * sizeof(int64_t));
    if (config_.state_dtype == StateDType::Int8) {
        for (Run& r : runs_) {  // blocks never straddle two runs (each is one update)
            r.block_offset = blocks_;
            blocks_ += static_cast<size_t>(q8_blocks(static_cast<int64_t>(r.numel)));
        }
        m8_ = static_cast<uint8_t*>(be_.alloc(std::max<size_t>(1, n), "AdamW first moments (int8)"));
        v8_ = static_cast<uint8_t*>(be_.alloc(std::max<size_t>(1, n), "AdamW second moments (int8)"));
        m_scale_ = static_cast<float*>(be_.alloc(std::max<size_t>(1, blocks_) * sizeof(float), "AdamW moment scales"));
        v_scale_ = static_cast<float*>(be_.alloc(std::max<size_t>(1, blocks_) * sizeof(float), "AdamW moment scales"));
        host_tables_ = make_q8_tables();
        tables_ = static_cast<Q8Tables*>(be_.alloc(sizeof(Q8Tables), "AdamW int8 code tables"));
        be_.copy_to_device(tables_, &host_tables_, sizeof(Q8Tables));
    } else {
        m_ = static_cast<float*>(be_.alloc(std::max<size_t>(1, n) * sizeof(float), "AdamW first moments"));
        v_ = static_cast<float*>(be_.alloc(std::max<size_t>(1, n) * sizeof(float), "AdamW second moments"));
    }
}

size_t AdamW::moment_bytes(const ParamTable& table, StateDType dtype) {
    const size_t n = table.grad_total();
    if (dtype == StateDType::Fp32) return 2 * n * sizeof(float);
    // The runs of the constructor: trainable tensors (and padding rows) adjacent in both
    // buffers; their blocks' scales, and the tables.
    size_t blocks = 0, run = 0, end = SIZE_MAX, grad_end = SIZE_MAX;
    auto add = [&](size_t offset, size_t grad_offset, size_t numel) {
        if (offset != end || grad_offset != grad_end) {
            blocks += static_cast<size_t>(q8_blocks(static_cast<int64_t>(run)));
            run = 0;
        }
        run += numel;
        end = offset + numel;
        grad_end = grad_offset + numel;
    };
    for (const ParamTensor& t : table.tensors()) {
        if (!t.trainable) continue;
        add(t.offset, t.grad_offset, t.numel);
        if (t.padding > 0) add(t.offset + t.numel, t.grad_offset + t.numel, t.padding);
    }
    blocks += static_cast<size_t>(q8_blocks(static_cast<int64_t>(run)));
    return 2 * n + 2 * blocks * sizeof(float) + sizeof(Q8Tables);
}

void AdamW::moments_to_host(float* m, float* v) const {
    const size_t n = hi_ - lo_;
    if (!m8_) {
        be_.copy_to_host(m + lo_, m_, n * sizeof(float));
        be_.copy_to_host(v + lo_, v_, n * sizeof(float));
        return;
    }
    std::vector<uint8_t> m8(n), v8(n);
    std::vector<float> ms(blocks_), vs(blocks_);
    be_.copy_to_host(m8.data(), m8_, n);
    be_.copy_to_host(v8.data(), v8_, n);
    be_.copy_to_host(ms.data(), m_scale_, blocks_ * sizeof(float));
    be_.copy_to_host(vs.data(), v_scale_, blocks_ * sizeof(float));
    for (const Run& r : runs_)
        for (size_t i = 0; i < r.numel; ++i) {
            const size_t g = r.grad_offset + i, b = r.block_offset + i / kQ8Block;
            m[g] = q8_decode_m(host_tables_, m8[g - lo_], ms[b]);
            v[g] = q8_decode_v(host_tables_, v8[g - lo_], vs[b]);
        }
}

void AdamW::moments_from_host(const float* m, const float* v) {
    const size_t n = hi_ - lo_;
    if (!m8_) {
        be_.copy_to_device(m_, m + lo_, n * sizeof(float));
        be_.copy_to_device(v_, v + lo_, n * sizeof(float));
        return;
    }
    std::vector<uint8_t> m8(n), v8(n);
    std::vector<float> ms(blocks_, 0.0f), vs(blocks_, 0.0f);
    for (const Run& r : runs_) {
        for (size_t i = 0; i < r.numel; ++i) {  // the blocks' scales: the largest magnitudes
            const size_t g = r.grad_offset + i, b = r.block_offset + i / kQ8Block;
            ms[b] = std::max(ms[b], std::fabs(m[g]));
            vs[b] = std::max(vs[b], v[g]);
        }
        for (size_t i = 0; i < r.numel; ++i) {
            const size_t g = r.grad_offset + i, b = r.block_offset + i / kQ8Block;
            m8[g - lo_] = q8_encode_m(host_tables_, m[g], ms[b]);
            v8[g - lo_] = q8_encode_v(host_tables_, v[g], vs[b]);
        }
    }
    be_.copy_to_device(m8_, m8.data(), n);
    be_.copy_to_device(v8_, v8.data(), n);
    be_.copy_to_device(m_scale_, ms.data(), blocks_ * sizeof(float));
    be_.copy_to_device(v_scale_, vs.data(), blocks_ * sizeof(float));
}

AdamW::~AdamW() {
    be_.free(m_);
    be_.free(v_);
    be_.free(m8_);
    be_.free(v8_);
    be_.free(m_scale_);
    be_.free(v_scale_);
    be_.free(tables_);
    be_.free(segment_ends_);
    be_.free(segment_decay_);
    be_.free(tensor_numel_);
}

void AdamW::update(float* params, const float* grads, StepScalars* s) {
    clip(grads, s);
    apply(params, grads, s);
}

void AdamW::clip(const float* grads, StepScalars* s) {
    optimizer_step_of(be_).grad_norm_clip(s, grads + lo_, hi_ - lo_,
                                          static_cast<float>(config_.grad_clip));
}

void AdamW::apply(float* params, const float* grads, StepScalars* s) {
    AdamWConfig hp;
    hp.beta1 = static_cast<float>(config_.beta1);
    hp.beta2 = static_cast<float>(config_.beta2);
    hp.eps = static_cast<float>(config_.eps);
    if (m8_) {  // int8 state: one update per run (its blocks), whatever accel.fused_adamw says
        for (const Run& r : runs_)
            optimizer_step_of(be_).adamw_step_q8(
                params + r.offset, grads + r.grad_offset, m8_ + (r.grad_offset - lo_),
                v8_ + (r.grad_offset - lo_), m_scale_ + r.block_offset, v_scale_ + r.block_offset,
                tables_, r.numel, r.segments, hp, s);
    } else if (fused_) {
        for (const Run& r : runs_)
            optimizer_step_of(be_).adamw_step(
                params + r.offset, grads + r.grad_offset, m_ + (r.grad_offset - lo_),
                v_ + (r.grad_offset - lo_), r.numel, r.segments, hp, s);
    } else {
        const auto* numel = static_cast<const int64_t*>(tensor_numel_);
        const auto* decay = static_cast<const float*>(segment_decay_);
        for (size_t i = 0; i < ranges_.size(); ++i) {
            const Range& r = ranges_[i];
            ParamSegments one;
            one.ends = numel + i;
            one.weight_decay = decay + i;
            one.count = 1;
            optimizer_step_of(be_).adamw_step(params + r.offset, grads + r.grad_offset,
                                              m_ + (r.grad_offset - lo_),
                                              v_ + (r.grad_offset - lo_), r.numel, one, hp, s);
        }
    }
    optimizer_step_of(be_).end_step(s, policy_);
}

void AdamW::pack_shard_params(const float* params, float* compact) const {
    for (const Range& r : ranges_)
        be_.copy_to_host(compact + r.grad_offset, params + r.offset, r.numel * sizeof(float));
}

void AdamW::unpack_params(const float* compact, float* params) const {
    for (const Range& r : all_ranges_)
        be_.copy_to_device(params + r.offset, compact + r.grad_offset, r.numel * sizeof(float));
}

}  // namespace trt

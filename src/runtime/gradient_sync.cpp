// GradientSync (gradient_sync.h): which way a data-parallel step's gradients are summed,
// the sums themselves, and ZeRO-1's sharded update.
#include "runtime/gradient_sync.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/bf16.h"
#include "runtime/session_dist.h"

namespace trt {

GradientSync::GradientSync(Backend& backend, Decoder& model, AdamW& optimizer,
                           dist::Communicator& world, const RunConfig& run, bool zero,
                           Logger& log)
    : backend_(backend), model_(model), optimizer_(optimizer), world_(world), run_(run),
      log_(log), rank_(world.rank()), world_size_(world.size()), zero_(zero) {
    join_device_collectives();
    plan_overlap();
}

// After the micro-batch loop: the update of the whole global batch. The gradients summed
// first; ZeRO-1: each rank updates its shard with its part of the summed gradients and the
// norm of all of them, then the ranks swap their parameters.
void GradientSync::update(StepScalars* scalars) {
    all_reduce_gradients(scalars);
    if (!zero_) {
        optimizer_.update(model_.params(), model_.grads(), scalars);
        return;
    }
    optimizer_.clip(model_.grads(), scalars);
    combine_shard_norms(scalars);
    optimizer_.apply(model_.params(), model_.grads(), scalars);
    gather_shard_params();
}

// On a backend with its own memory, the gradients can be summed there (NCCL) rather than
// through host copies over MPI: dist.backend = "nccl" insists, "auto" takes it when it loads.
// The group is made from an id rank 0 draws, sent to every rank over the MPI world.
void GradientSync::join_device_collectives() {
    const DistBackend asked = run_.dist.backend;
    // Every rank must take the same path below (each step's collectives depend on it): a
    // rank whose runtime.device = "auto" found no GPU, or no NCCL, must not split the world.
    const bool device_memory = backend_.capabilities().device_memory;
    if (any_rank(world_, device_memory) && any_rank(world_, !device_memory))
        fail(Status::Config, "data parallel: some ranks run on a GPU and others on the CPU "
             "(this one: ", backend_.name(), "); set runtime.device for all of them");
    if (!device_memory) {
        if (asked == DistBackend::Nccl)
            fail(Status::Config, "dist.backend = \"nccl\" sums gradients on GPUs, but this run "
                 "is on the ", backend_.name(), " backend; use \"mpi\" (or \"auto\")");
        return;
    }
    std::string why;
    DeviceCollectives* collectives = backend_.collectives(&why);
    const bool here = collectives != nullptr;
    const bool can = !any_rank(world_, !here);
    if (here && !can) why = "another rank cannot use NCCL";
    if (asked == DistBackend::Nccl && !can)
        fail(Status::Unsupported, "dist.backend = \"nccl\": ", why);
    const bool bf16_wire = run_.dist.wire_dtype == WireDType::Bf16;
    if (asked == DistBackend::Nccl && bf16_wire)
        fail(Status::Config, "dist.wire_dtype = \"bf16\" is built for sums over MPI only; "
             "use dist.backend = \"mpi\" or dist.wire_dtype = \"fp32\"");
    if (asked == DistBackend::Mpi || !can || bf16_wire) {
        log_.info("data parallel: gradients through host copies over MPI (",
                  asked == DistBackend::Mpi ? std::string("dist.backend = \"mpi\"")
                  : bf16_wire ? std::string("dist.wire_dtype = \"bf16\"") : why, ")");
        return;
    }
    if (zero_) {  // (not built on the device yet: ZeRO-1 reduce-scatters through the host)
        log_.info("data parallel: ZeRO-1 sums its shards through host copies over MPI");
        return;
    }
    std::vector<uint8_t> mine(DeviceCollectives::kIdBytes, 0), all;
    if (rank_ == 0) collectives->make_id(mine.data());
    all.resize(mine.size() * static_cast<size_t>(world_size_));
    world_.all_gather(mine.data(), mine.size(), all.data());  // rank 0's, to every rank
    collectives->join(all.data(), static_cast<int>(rank_), static_cast<int>(world_size_));
    device_ = collectives;
    log_.info("data parallel: gradients summed on the device (", backend_.name(), ", NCCL)");
}

// Gradients and the loss sum, summed over the ranks once per step (after the micro-batch
// loop), so each rank's update is the one of the whole global batch — under ZeRO-1 only the
// rank's shard of them (reduce-scatter). On a backend with its own memory, through a host
// copy (NCCL will do it in place).
void GradientSync::all_reduce_gradients(StepScalars* scalars) {
    if (overlap_) {  // the blocks' ranges are summed (or being summed) already
        for (const GradRange& r : rest_ranges_) sum_range(r);
        if (device_) device_->wait();
    } else if (device_) {  // in place, on the backend's stream
        device_->all_reduce_sum(model_.grads(), model_.table().grad_total());
    } else if (!backend_.capabilities().device_memory) {
        sum_gradients_over_mpi(model_.grads());
    } else {
        const size_t n = model_.table().grad_total();
        host_grads_.resize(n);
        backend_.copy_to_host(host_grads_.data(), model_.grads(), n * sizeof(float));
        sum_gradients_over_mpi(host_grads_.data());
        backend_.copy_to_device(model_.grads(), host_grads_.data(), n * sizeof(float));
    }
    // And the loss sum.
    if (device_) {
        device_->all_reduce_sum(&scalars->loss_sum, 1);
        return;
    }
    StepScalars s;
    backend_.copy_to_host(&s, scalars, sizeof s);
    world_.all_reduce_sum(&s.loss_sum, 1);
    backend_.copy_to_device(scalars, &s, sizeof s);
}

// All the compact gradients in host memory: reduce-scattered (ZeRO-1), summed as bf16
// (dist.wire_dtype), or summed in fp32.
void GradientSync::sum_gradients_over_mpi(float* grads) {
    const size_t n = model_.table().grad_total();
    if (zero_) {
        world_.reduce_scatter_sum(grads, optimizer_.shard_bounds());
    } else if (run_.dist.wire_dtype == WireDType::Bf16) {  // half the bytes on the wire
        wire_.resize(n);
        for (size_t i = 0; i < n; ++i) wire_[i] = float_to_bf16(grads[i]);
        world_.all_reduce_sum_bf16(wire_.data(), n);
        for (size_t i = 0; i < n; ++i) grads[i] = bf16_to_float(wire_[i]);
    } else {
        world_.all_reduce_sum(grads, n);
    }
}

// dist.overlap: each block's trainable tensors must be one compact range (then its sum can
// start when the block's backward ends); where a family or train.trainable interleaves them,
// or the sums would go through host copies of device memory, everything is summed at the end.
void GradientSync::plan_overlap() {
    if (!run_.dist.overlap) return;
    auto no = [&](const std::string& why) {
        log_.info("data parallel: dist.overlap = true, but the gradients are summed after the "
                  "backward: ", why);
    };
    if (zero_) return no("ZeRO-1 reduce-scatters them at once");
    if (run_.dist.wire_dtype != WireDType::Fp32) return no("dist.wire_dtype = \"bf16\"");
    if (backend_.capabilities().device_memory && !device_)
        return no("the sums go through host copies (no NCCL)");
    const ParamTable& table = model_.table();
    const int L = table.spec().L;
    std::vector<GradRange> layers(static_cast<size_t>(L));
    std::vector<size_t> held(static_cast<size_t>(L), 0);
    for (const ParamTensor& t : table.tensors()) {
        if (!t.trainable || t.layer < 0) continue;
        GradRange& r = layers[static_cast<size_t>(t.layer)];
        const size_t lo = t.grad_offset, hi = t.grad_offset + t.numel + t.padding;
        r = held[static_cast<size_t>(t.layer)] == 0 ? GradRange{lo, hi}
                                                     : GradRange{std::min(r.lo, lo), std::max(r.hi, hi)};
        held[static_cast<size_t>(t.layer)] += t.numel + t.padding;
    }
    for (int i = 0; i < L; ++i)
        if (held[static_cast<size_t>(i)] != layers[static_cast<size_t>(i)].hi - layers[static_cast<size_t>(i)].lo)
            return no(cat("block ", i, "'s gradients are not one range"));
    // The rest: what no block holds, in order.
    std::vector<GradRange> sorted;
    for (const GradRange& r : layers)
        if (r.hi > r.lo) sorted.push_back(r);
    std::sort(sorted.begin(), sorted.end(), [](const GradRange& a, const GradRange& b) { return a.lo < b.lo; });
    std::vector<GradRange> rest;
    size_t at = 0;
    for (const GradRange& r : sorted) {
        if (r.lo > at) rest.push_back({at, r.lo});
        at = r.hi;
    }
    if (table.grad_total() > at) rest.push_back({at, table.grad_total()});
    layer_ranges_ = std::move(layers);
    rest_ranges_ = std::move(rest);
    overlap_ = true;
    log_.info("data parallel: each block's gradients are summed as soon as its backward is done",
              device_ ? " (NCCL, on a side stream beside the backward)"
                          : " (over MPI, in turn: the CPU backward leaves no core to overlap with)");
}

// One range of the compact gradients, summed across the ranks.
void GradientSync::sum_range(const GradRange& r) {
    if (r.hi <= r.lo) return;
    if (device_)
        device_->all_reduce_sum_async(model_.grads() + r.lo, r.hi - r.lo);
    else
        world_.all_reduce_sum(model_.grads() + r.lo, r.hi - r.lo);
}

// ZeRO-1: each rank's clip() saw its shard; the norm is of all of them (sum of squares over
// the shards; a non-finite shard makes it NaN on every rank, so all skip the update).
void GradientSync::combine_shard_norms(StepScalars* scalars) {
    StepScalars s;
    backend_.copy_to_host(&s, scalars, sizeof s);
    const double shard = s.grad_norm * static_cast<double>(s.loss_scale);
    double sum_squares = s.nonfinite ? std::numeric_limits<double>::quiet_NaN() : shard * shard;
    world_.all_reduce_sum(&sum_squares, 1);
    set_grad_norm(&s, sum_squares, static_cast<float>(run_.optim.grad_clip));
    backend_.copy_to_device(scalars, &s, sizeof s);
}

// ZeRO-1: every rank's updated shard of the parameters, to every rank (the compact order).
void GradientSync::gather_shard_params() {
    zero_params_.resize(model_.table().grad_total());
    optimizer_.pack_shard_params(model_.params(), zero_params_.data());
    world_.all_gather_parts(zero_params_.data(), optimizer_.shard_bounds());
    optimizer_.unpack_params(zero_params_.data(), model_.params());
}

}  // namespace trt

// The data-parallel parts of a Session (docs/DISTRIBUTED.md): which world it joins, the
// checks every rank makes together, and the gradient all-reduce.
#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>

#include "core/bf16.h"
#include "dist/communicator.h"
#include "io/sha256.h"
#include "runtime/session.h"
#include "runtime/session_dist.h"
#include "tokenizer/tokenizer_files.h"

namespace trt {

std::shared_ptr<dist::Communicator> launcher_world(const DistConfig& d) {
    switch (d.backend) {
        case DistBackend::None: return nullptr;
        case DistBackend::Mpi:
        case DistBackend::Nccl: return dist::join_mpi_world(d.timeout);  // NCCL's bootstrap
        case DistBackend::Auto:
            return dist::launcher_world_size() > 1 ? dist::join_mpi_world(d.timeout) : nullptr;
    }
    return nullptr;
}

void Session::require_same_config_on_every_rank() {
    // Ranks that train different models or data would still exchange gradients of the same
    // size, silently: compare the digests of the resolved configs.
    const std::string dump = config_.dump();
    const std::string mine = sha256_hex(dump.data(), dump.size());
    std::string all(mine.size() * static_cast<size_t>(world_size_), '\0');
    world_->all_gather(mine.data(), mine.size(), all.data());
    for (int64_t r = 0; r < world_size_; ++r) {
        const std::string theirs = all.substr(static_cast<size_t>(r) * mine.size(), mine.size());
        if (theirs != all.substr(0, mine.size()))
            fail(Status::Config, "data parallel: rank ", r, " runs another config than rank 0 "
                 "(sha256 of the resolved config ", theirs.substr(0, 12), " against ",
                 all.substr(0, 12), "); every rank must run the same config (the same file, "
                 "and the same overrides)");
    }
}

namespace {

// "1", "1 and 3", "1, 2, 3 and 5 more": the ranks that differ from rank 0.
std::string rank_list(const std::vector<int64_t>& ranks) {
    constexpr size_t kShown = 8;
    std::string out;
    for (size_t i = 0; i < ranks.size() && i < kShown; ++i)
        out += cat(i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ", ranks[i]);
    if (ranks.size() > kShown) out += cat(" and ", ranks.size() - kShown, " more");
    return cat(ranks.size() == 1 ? "rank " : "ranks ", out);
}

// A named run of bytes whose sha256 the ranks compare.
struct Piece {
    std::string name;
    const void* data;
    size_t bytes;
};

// Each piece's sha256 (hex), on up to 8 threads: one core hashes ~1.8 GB/s with the SHA
// extensions, ~0.3 GB/s without (a 1B model's fp32 weights are 4 GB).
std::vector<std::string> sha256_pieces(const std::vector<Piece>& pieces) {
    std::vector<std::string> hex(pieces.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < pieces.size();)
            hex[i] = sha256_hex(pieces[i].data, pieces[i].bytes);
    };
    const size_t n = std::min<size_t>({8, std::max(1u, std::thread::hardware_concurrency()),
                                       pieces.size()});
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    return hex;
}

std::vector<std::string> names_of(const std::vector<Piece>& pieces) {
    std::vector<std::string> names;
    for (const Piece& p : pieces) names.push_back(p.name);
    return names;
}

}  // namespace

// Every rank's digests of the same named items, each against rank 0's: the first item where
// a rank differs (*item: its index), with the ranks that do, else "" (every rank computes the
// same answer).
std::string Session::digests_differ(const std::vector<std::string>& names,
                                    const std::vector<std::string>& hex, size_t* item) {
    const size_t bytes = 64 * hex.size();  // sha256 as lower-case hex
    std::string mine;
    mine.reserve(bytes);
    for (const std::string& h : hex) mine += h;
    TRT_CHECK(mine.size() == bytes && names.size() == hex.size(), "digests_differ: sha256 hex");
    std::string all(bytes * static_cast<size_t>(world_size_), '\0');
    world_->all_gather(mine.data(), bytes, all.data());
    std::vector<int64_t> ranks;
    size_t first = hex.size();
    for (int64_t r = 1; r < world_size_; ++r)
        for (size_t i = 0; i < hex.size(); ++i)
            if (all.compare(static_cast<size_t>(r) * bytes + 64 * i, 64, all, 64 * i, 64) != 0) {
                if (ranks.empty() || ranks.back() != r) ranks.push_back(r);
                first = std::min(first, i);
            }
    if (ranks.empty()) return {};
    if (item) *item = first;
    const size_t at = static_cast<size_t>(ranks.front()) * bytes + 64 * first;
    return cat(rank_list(ranks), " (", names[first], ": sha256 ", all.substr(at, 12),
               "... on rank ", ranks.front(), ", ", all.substr(64 * first, 12), "... on rank 0)");
}

// A rank that read other files at the same paths (another node's copy of model.init_from, a
// stale tokenizer) would train silently: the gradients have the same sizes, but the
// replicas never agree. Compared right after the weights are set, before the first step.
// A random init is compared too: it is computed alike by construction, unless a rank runs
// another build or CPU that computes it otherwise.
void Session::require_same_start_on_every_rank(const float* host_params) {
    std::vector<Piece> pieces;
    for (const ParamTensor& t : model_->table().tensors())
        pieces.push_back({cat("tensor '", t.name, "'"), host_params + t.offset,
                          t.numel * sizeof(float)});
    std::string tokenizer;  // the digests of the files a tokenizer is loaded from
    if (!run_.data.tokenizer.empty()) {
        const tok::TokenizerFiles files =
            tok::find_tokenizer_files(run_.data.tokenizer, "data.tokenizer");
        for (const std::string& f : {files.path, files.tokenizer_config})
            if (!f.empty()) tokenizer += sha256_file_hex(f);
        pieces.push_back({cat("data.tokenizer = '", run_.data.tokenizer, "'"), tokenizer.data(),
                          tokenizer.size()});
    }
    size_t item = 0;
    const std::string differ = digests_differ(names_of(pieces), sha256_pieces(pieces), &item);
    if (differ.empty()) return;
    const ModelConfig& mc = run_.model;
    if (item == model_->table().tensors().size())  // the weights agree, the tokenizer not
        fail(Status::Config, "data parallel: ", differ, " reads another tokenizer than rank 0 "
             "from the same path; every rank must read the same files: give every node the "
             "same tokenizer (a shared filesystem, or identical copies)");
    std::string from = mc.init_from.empty() ? cat("a random init, model.seed = ", mc.seed)
                                            : cat("model.init_from = '", mc.init_from, "'");
    if (!run_.lora.init_from.empty()) from += cat(", lora.init_from = '", run_.lora.init_from, "'");
    fail(Status::Config, "data parallel: ", differ, " starts from other weights than rank 0 (",
         from, "), so the replicas would never agree; ",
         mc.init_from.empty() && run_.lora.init_from.empty()
             ? "every rank must run the same libtrainrt build (the same library on every node)"
             : "every rank must read the same files: give every node the same weights at that "
               "path (a shared filesystem, or identical copies)");
}

// load() on several ranks: each read the checkpoint itself, so each must have read the same
// one (a path that names other files on another node, a checkpoint rewritten meanwhile).
void Session::require_same_checkpoint_on_every_rank(const std::string& dir, const float* params,
                                                    const float* m, const float* v,
                                                    const CheckpointState& st) {
    std::vector<Piece> pieces;
    for (const ParamTensor& t : model_->table().tensors())
        pieces.push_back({cat("tensor '", t.name, "'"), params + t.offset, t.numel * sizeof(float)});
    for (const auto& [moments, what] : {std::pair<const float*, const char*>{m, "m"}, {v, "v"}})
        for (const ParamTensor& t : model_->table().tensors())
            if (t.trainable)
                pieces.push_back({cat("optimizer ", what, " of '", t.name, "'"),
                                  moments + t.grad_offset, t.numel * sizeof(float)});
    const std::string counters = cat(st.step, " ", st.tokens_total, " ", st.cursor_shard, " ",
                                     st.cursor_pos, " ", st.loss_scale);
    pieces.push_back({"step, tokens and sampler cursor", counters.data(), counters.size()});
    const std::string differ = digests_differ(names_of(pieces), sha256_pieces(pieces), nullptr);
    if (!differ.empty())
        fail(Status::Config, "data parallel: ", differ, " loaded another checkpoint than rank 0 "
             "(this rank read '", dir, "'), so the replicas would never agree; every rank must "
             "load the same checkpoint: give every node the same files at that path (a shared "
             "filesystem, or identical copies)");
}

// On a backend with its own memory, the gradients can be summed there (NCCL) rather than
// through host copies over MPI: dist.backend = "nccl" insists, "auto" takes it when it loads.
// The group is made from an id rank 0 draws, sent to every rank over the MPI world.
void Session::join_device_collectives() {
    const DistBackend asked = run_.dist.backend;
    // Every rank must take the same path below (each step's collectives depend on it): a
    // rank whose runtime.device = "auto" found no GPU, or no NCCL, must not split the world.
    const bool device_memory = backend_->capabilities().device_memory;
    if (any_rank(device_memory) && any_rank(!device_memory))
        fail(Status::Config, "data parallel: some ranks run on a GPU and others on the CPU "
             "(this one: ", backend_->name(), "); set runtime.device for all of them");
    if (!device_memory) {
        if (asked == DistBackend::Nccl)
            fail(Status::Config, "dist.backend = \"nccl\" sums gradients on GPUs, but this run "
                 "is on the ", backend_->name(), " backend; use \"mpi\" (or \"auto\")");
        return;
    }
    std::string why;
    const bool here = backend_->device_collectives(&why);
    const bool can = !any_rank(!here);
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
    std::vector<uint8_t> mine(Backend::kCollectiveIdBytes, 0), all;
    if (rank_ == 0) backend_->make_collective_id(mine.data());
    all.resize(mine.size() * static_cast<size_t>(world_size_));
    world_->all_gather(mine.data(), mine.size(), all.data());  // rank 0's, to every rank
    backend_->join_collectives(all.data(), static_cast<int>(rank_), static_cast<int>(world_size_));
    device_sum_ = true;
    log_.info("data parallel: gradients summed on the device (", backend_->name(), ", NCCL)");
}

void Session::mark_failed() noexcept {
    if (world_size_ > 1) world_->mark_failed();
}

StepResult Session::step() {
    try {
        return step_on_this_rank();
    } catch (...) {
        mark_failed();
        throw;
    }
}

TrainOutcome Session::train(int64_t n_steps, const ProgressCallback& callback) {
    try {
        return train_on_this_rank(n_steps, callback);
    } catch (...) {
        mark_failed();
        throw;
    }
}

bool Session::any_rank(bool mine) {
    double votes = mine ? 1.0 : 0.0;
    world_->all_reduce_sum(&votes, 1);
    return votes > 0.0;
}

// After the micro-batch loop: the update of the whole global batch. Alone: AdamW. Several
// ranks: the gradients summed first. ZeRO-1: each rank updates its shard with its part of
// the summed gradients and the norm of all of them, then the ranks swap their parameters.
void Session::update_weights() {
    if (world_size_ > 1) all_reduce_gradients();
    if (!zero_) {
        optimizer_->update(model_->params(), model_->grads(), scalars_);
        return;
    }
    optimizer_->clip(model_->grads(), scalars_);
    combine_shard_norms();
    optimizer_->apply(model_->params(), model_->grads(), scalars_);
    gather_shard_params();
}

// Gradients and the loss sum, summed over the ranks once per step (after the micro-batch
// loop), so each rank's update is the one of the whole global batch — under ZeRO-1 only the
// rank's shard of them (reduce-scatter). On a backend with its own memory, through a host
// copy (NCCL will do it in place).
void Session::all_reduce_gradients() {
    if (overlap_) {  // the blocks' ranges are summed (or being summed) already
        for (const GradRange& r : rest_ranges_) sum_range(r);
        backend_->wait_collectives();
    } else if (device_sum_) {  // in place, on the backend's stream
        backend_->all_reduce_sum(model_->grads(), model_->table().grad_total());
    } else if (!backend_->capabilities().device_memory) {
        sum_gradients_over_mpi(model_->grads());
    } else {
        const size_t n = model_->table().grad_total();
        host_grads_.resize(n);
        backend_->copy_to_host(host_grads_.data(), model_->grads(), n * sizeof(float));
        sum_gradients_over_mpi(host_grads_.data());
        backend_->copy_to_device(model_->grads(), host_grads_.data(), n * sizeof(float));
    }
    // And the loss sum.
    if (device_sum_) {
        backend_->all_reduce_sum(&scalars_->loss_sum, 1);
        return;
    }
    StepScalars s;
    backend_->copy_to_host(&s, scalars_, sizeof s);
    world_->all_reduce_sum(&s.loss_sum, 1);
    backend_->copy_to_device(scalars_, &s, sizeof s);
}

// All the compact gradients in host memory: reduce-scattered (ZeRO-1), summed as bf16
// (dist.wire_dtype), or summed in fp32.
void Session::sum_gradients_over_mpi(float* grads) {
    const size_t n = model_->table().grad_total();
    if (zero_) {
        world_->reduce_scatter_sum(grads, optimizer_->shard_bounds());
    } else if (run_.dist.wire_dtype == WireDType::Bf16) {  // half the bytes on the wire
        wire_.resize(n);
        for (size_t i = 0; i < n; ++i) wire_[i] = float_to_bf16(grads[i]);
        world_->all_reduce_sum_bf16(wire_.data(), n);
        for (size_t i = 0; i < n; ++i) grads[i] = bf16_to_float(wire_[i]);
    } else {
        world_->all_reduce_sum(grads, n);
    }
}

// dist.overlap: each block's trainable tensors must be one compact range (then its sum can
// start when the block's backward ends); where a family or train.trainable interleaves them,
// or the sums would go through host copies of device memory, everything is summed at the end.
void Session::plan_overlap() {
    if (!run_.dist.overlap) return;
    auto no = [&](const std::string& why) {
        log_.info("data parallel: dist.overlap = true, but the gradients are summed after the "
                  "backward: ", why);
    };
    if (zero_) return no("ZeRO-1 reduce-scatters them at once");
    if (run_.dist.wire_dtype != WireDType::Fp32) return no("dist.wire_dtype = \"bf16\"");
    if (backend_->capabilities().device_memory && !device_sum_)
        return no("the sums go through host copies (no NCCL)");
    const ParamTable& table = model_->table();
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
              device_sum_ ? " (NCCL, on a side stream beside the backward)"
                          : " (over MPI, in turn: the CPU backward leaves no core to overlap with)");
}

// One range of the compact gradients, summed across the ranks.
void Session::sum_range(const GradRange& r) {
    if (r.hi <= r.lo) return;
    if (device_sum_)
        backend_->all_reduce_sum_async(model_->grads() + r.lo, r.hi - r.lo);
    else
        world_->all_reduce_sum(model_->grads() + r.lo, r.hi - r.lo);
}

// ZeRO-1: each rank's clip() saw its shard; the norm is of all of them (sum of squares over
// the shards; a non-finite shard makes it NaN on every rank, so all skip the update).
void Session::combine_shard_norms() {
    StepScalars s;
    backend_->copy_to_host(&s, scalars_, sizeof s);
    const double shard = s.grad_norm * static_cast<double>(s.loss_scale);
    double sum_squares = s.nonfinite ? std::numeric_limits<double>::quiet_NaN() : shard * shard;
    world_->all_reduce_sum(&sum_squares, 1);
    set_grad_norm(&s, sum_squares, static_cast<float>(run_.optim.grad_clip));
    backend_->copy_to_device(scalars_, &s, sizeof s);
}

// ZeRO-1: every rank's updated shard of the parameters, to every rank (the compact order).
void Session::gather_shard_params() {
    zero_params_.resize(model_->table().grad_total());
    optimizer_->pack_shard_params(model_->params(), zero_params_.data());
    world_->all_gather_parts(zero_params_.data(), optimizer_->shard_bounds());
    optimizer_->unpack_params(zero_params_.data(), model_->params());
}

}  // namespace trt

// The data-parallel parts of a Session (docs/DISTRIBUTED.md): which world it joins, the
// checks every rank makes together, and what a rank that fails tells the others. The
// gradients' sums are GradientSync's (gradient_sync.h).
#include "runtime/session_dist.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include "dist/communicator.h"
#include "io/sha256.h"
#include "runtime/session.h"
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

bool any_rank(dist::Communicator& world, bool mine) {
    double votes = mine ? 1.0 : 0.0;
    world.all_reduce_sum(&votes, 1);
    return votes > 0.0;
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
void Session::require_same_start_on_every_rank(
    const float* host_params, const std::map<std::string, std::string>& quantised_sha256) {
    std::vector<Piece> pieces;
    for (const ParamTensor& t : model_->table().tensors())
        pieces.push_back({cat("tensor '", t.name, "'"), host_params + t.offset,
                          t.numel * sizeof(float)});
    // A quantised base (lora.base_dtype) by the digests of the values it was quantised from.
    for (const auto& [name, hex] : quantised_sha256)
        pieces.push_back({cat("tensor '", name, "'"), hex.data(), hex.size()});
    size_t tokenizer_item = SIZE_MAX;
    std::string tokenizer;  // the digests of the files a tokenizer is loaded from
    if (!run_.data.tokenizer.empty()) {
        const tok::TokenizerFiles files =
            tok::find_tokenizer_files(run_.data.tokenizer, "data.tokenizer");
        for (const std::string& f : {files.path, files.tokenizer_config})
            if (!f.empty()) tokenizer += sha256_file_hex(f);
        tokenizer_item = pieces.size();
        pieces.push_back({cat("data.tokenizer = '", run_.data.tokenizer, "'"), tokenizer.data(),
                          tokenizer.size()});
    }
    size_t item = 0;
    const std::string differ = digests_differ(names_of(pieces), sha256_pieces(pieces), &item);
    if (differ.empty()) return;
    const ModelConfig& mc = run_.model;
    if (item == tokenizer_item)  // the weights agree, the tokenizer not
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

}  // namespace trt

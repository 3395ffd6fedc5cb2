// Session: the start-up log — the resolved switches ("acceleration: …", also the run header
// of metrics.jsonl), the model, what trains, the world and the batch — and the warnings for
// accelerations asked for and not taken.
#include <cstdio>

#include "runtime/model_info.h"
#include "runtime/session.h"

namespace trt {

std::string Session::acceleration_line() const {
    const RunConfig& r = run_;
    const BackendCaps caps = backend_->capabilities();
    auto configured = [](const std::string& resolved, const char* asked) {
        return resolved + (resolved == asked ? "" : cat(" (", asked, ")"));
    };
    auto on_off = [](bool b) { return b ? "on" : "off"; };
    // CUDA-only switches on the CPU say n/a; those the CUDA backend does not implement yet
    // say so, rather than pretending.
    // A switch that is on as asked prints "on"; one that is not taken says why.
    auto resolved = [&](bool on, bool asked, const std::string& note) {
        if (on == asked) return std::string(on_off(on));
        return cat(on_off(on), " (", on_off(asked), note.empty() ? "" : "; ", note, ")");
    };
    const AccelStatus acc = backend_->accel_status();
    const std::string attention =
        acc.attention + (acc.attention_note.empty() ? "" : cat(" [", acc.attention_note, "]"));
    // accel.deterministic: the CPU is deterministic whatever it says; on CUDA "off" says what
    // the allowance does (only cuDNN attention engines can be nondeterministic).
    const bool fixed = caps.always_deterministic;
    std::string deterministic =
        resolved(fixed || acc.deterministic, r.accel.deterministic,
                 fixed ? cat(backend_->name(), ": always deterministic") : "");
    if (!fixed && !acc.deterministic && !acc.deterministic_note.empty())
        deterministic += cat(" (", acc.deterministic_note, ")");
    return cat(
        "device=", configured(backend_->name(), to_string(r.runtime.device)), " (",
        backend_->device_name(), ")",
        " precision=", configured(to_string(precision_), to_string(r.runtime.precision)),
        acc.precision_note.empty() ? "" : cat(" [", acc.precision_note, "]"),
        " threads=", backend_->num_threads(),
        acc.threads_note.empty() ? "" : cat(" [", acc.threads_note, "]"),
        " attention=", configured(attention, to_string(r.accel.attention)),
        " deterministic=", deterministic, " fused_classifier=",
        resolved(caps.always_fused_classifier || acc.fused_classifier, r.accel.fused_classifier,
                 caps.always_fused_classifier ? cat(backend_->name(), ": always fused") : ""),
        " fused_adamw=", on_off(r.accel.fused_adamw), " cuda_graphs=",
        resolved(step_graph_->state() != GraphRunner::State::Off, r.accel.cuda_graphs,
                 step_graph_->note()),
        " matmul_epilogues=",
        resolved(
            acc.matmul_epilogues, r.accel.matmul_epilogues,
            caps.matmul_epilogues ? acc.epilogues_note : cat(backend_->name(), ": not applicable")),
        " placement=",
        configured(feed_->resident() ? "device" : "host", to_string(r.data.placement)),
        " head_chunk_rows=", model_->head_chunk_rows(),
        r.accel.head_chunk_rows > 0 ? "" : " (auto)",
        acc.cpu_matmul.empty()
            ? std::string()
            : cat(" cpu_matmul=", acc.cpu_matmul,
                  acc.cpu_matmul_note.empty() ? "" : cat(" [", acc.cpu_matmul_note, "]"),
                  acc.cpu_matmul == to_string(r.accel.cpu_matmul)
                      ? ""
                      : cat(" (", to_string(r.accel.cpu_matmul), ")")),
        " max_inflight=", max_inflight_);
}

std::string Session::model_line() const {
    const RunConfig& r = run_;
    return cat(describe(model_->spec()), ", ", model_->table().num_params(), " parameters, init ",
               r.model.init_from.empty() ? cat("random (seed ", r.model.seed, ")")
                                         : cat("from ", r.model.init_from));
}

void Session::log_startup() const {
    const RunConfig& r = run_;
    const BackendCaps caps = backend_->capabilities();
    const AccelStatus acc = backend_->accel_status();
    log_.info("acceleration: ", acceleration_line());
    if (r.accel.cpu_matmul == CpuMatmul::Onednn && acc.cpu_matmul == "openblas")
        log_.warn("matmuls: accel.cpu_matmul = \"onednn\" was asked for, but matmuls run on "
                  "OpenBLAS: ", acc.cpu_matmul_note);
    // A cuDNN attention asked for and not taken changes speed and memory: say why at WARN, not
    // only inside the bracket above (which INFO-filtered sinks never see).
    if (r.accel.attention == AttentionKind::Cudnn && acc.attention != "cudnn")
        log_.warn("attention: accel.attention = \"cudnn\" was asked for, but attention runs on "
                  "the ", acc.attention, " path: ",
                  !acc.attention_note.empty() ? acc.attention_note
                  : cat("the ", backend_->name(), " backend ",
                        caps.cudnn_attention ? "gave no reason" : "has no cuDNN attention"));
    log_.info("model: ", model_line());
    if (const ParamTable& t = model_->table(); !t.all_trainable()) {
        size_t frozen = 0;
        for (const ParamTensor& p : t.tensors()) frozen += !p.trainable;
        const double share = 100.0 * static_cast<double>(t.num_trainable_params()) /
                             static_cast<double>(t.num_params());
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.2f%%", share);
        log_.info("trainable: ", t.num_trainable_params(), " of ", t.num_params(),
                  " parameters (", pct, "; ",
                  t.has_lora() ? (r.train.trainable.empty() ? "the LoRA adapters"
                                                            : "the LoRA adapters and train.trainable")
                               : "train.trainable",
                  "), ", frozen, " of ", t.tensors().size(),
                  " tensors frozen (no gradients, no AdamW moments)");
    }
    if (world_size_ > 1) {
        const std::vector<size_t>& cut = optimizer_->shard_bounds();
        log_.info("data parallel: ", world_size_, " ranks over ", world_->name(),
                  zero_ ? cat(", ZeRO-1 (rank 0 keeps AdamW state for ", cut[1] - cut[0], " of ",
                              cut.back(), " parameters)")
                        : std::string(", every rank keeps the whole AdamW state (dist.zero = 0)"));
    }
    log_.info("batch: ", r.train.grad_accum, " x ",
              world_size_ > 1 ? cat(world_size_, " ranks x ") : std::string(), r.train.batch_size,
              " x ", r.train.seq_len, " = ", tokens_per_step(),
              " tokens per step; ",
              train_examples_.set ? cat("examples with loss masks, ",
                                        r.data.packing ? "packed" : "padded", " rows")
                                  : cat("sampler ", to_string(r.data.sampler)),
              "; ",
              train_data_ ? cat(train_data_->total_tokens(), " train tokens in ",
                                train_data_->num_shards(), " shard(s)")
                          : std::string(empty_train_split_ ? "an empty train split"
                                                           : "no train data"),
              "; ",
              val_data_ ? cat(val_data_->total_tokens(), " val tokens") : std::string("no val data"));
    log_.info("memory: ", backend_->bytes_in_use(), " bytes in use, ",
              backend_->bytes_reserved(), " reserved on the ", backend_->name(), " backend");
}

}  // namespace trt

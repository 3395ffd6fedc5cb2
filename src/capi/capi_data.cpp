// C API: data preparation.
#include <string>
#include <vector>

#include "capi/barrier.h"
#include "capi/json_argument.h"
#include "capi/versioned.h"
#include "data/prepare.h"
#include "data/prepare_chat.h"
#include "data/prepare_text.h"

using namespace trt;

extern "C" {

TRAINRT_API trainrt_status trainrt_prepare_bytes(int64_t* out_train_tokens,
                                                 int64_t* out_val_tokens,
                                                 const char* text_path, const char* out_dir,
                                                 double val_fraction) {
    return capi::guarded("trainrt_prepare_bytes", [&] {
        capi::require(text_path, "trainrt_prepare_bytes", "text_path");
        capi::require(out_dir, "trainrt_prepare_bytes", "out_dir");
        const PrepareResult r = prepare_bytes(text_path, out_dir, val_fraction);
        if (out_train_tokens != nullptr) *out_train_tokens = r.train_tokens;
        if (out_val_tokens != nullptr) *out_val_tokens = r.val_tokens;
        return TRAINRT_OK;
    });
}

TRAINRT_API void trainrt_prepare_options_init(trainrt_prepare_options* options) {
    if (options == nullptr) return;
    *options = trainrt_prepare_options TRAINRT_PREPARE_OPTIONS_INIT;
}

TRAINRT_API void trainrt_prepare_result_init(trainrt_prepare_result* result) {
    if (result == nullptr) return;
    *result = trainrt_prepare_result TRAINRT_PREPARE_RESULT_INIT;
}

TRAINRT_API trainrt_status trainrt_prepare_text(trainrt_prepare_result* out,
                                                const char* const* inputs, size_t n_inputs,
                                                const char* out_dir,
                                                const trainrt_prepare_options* options) {
    return capi::guarded("trainrt_prepare_text", [&] {
        const char* fn = "trainrt_prepare_text";
        capi::require(options, fn, "options");
        capi::require(out_dir, fn, "out_dir");
        if (inputs == nullptr && n_inputs != 0)
            fail(Status::InvalidArgument, fn, ": inputs is NULL but n_inputs is ", n_inputs);
        if (n_inputs == 0) fail(Status::InvalidArgument, fn, ": no input files (n_inputs is 0)");
        const trainrt_prepare_options o =
            capi::read_versioned(options, trainrt_prepare_options TRAINRT_PREPARE_OPTIONS_INIT, fn);
        if (o.tokenizer == nullptr)
            fail(Status::InvalidArgument, fn, ": options->tokenizer must not be NULL (a "
                 "tokenizer.json or a model folder; trainrt_prepare_bytes needs none)");
        std::vector<std::string> paths;
        for (size_t i = 0; i < n_inputs; i++) {
            if (inputs[i] == nullptr)
                fail(Status::InvalidArgument, fn, ": inputs[", i, "] must not be NULL");
            paths.emplace_back(inputs[i]);
        }
        if (o.chat != 0) {
            if (o.chat != 1)
                fail(Status::InvalidArgument, fn, ": options->chat = ", o.chat, " (0 or 1)");
            if (o.jsonl_field != nullptr || o.shard_tokens != 0)
                fail(Status::InvalidArgument, fn, ": options->chat takes whole conversations per "
                     "line and one file per split: leave jsonl_field NULL and shard_tokens 0");
            if (o.template_vars != nullptr &&
                !capi::parse_json_argument(o.template_vars, fn, "options->template_vars")
                     .is_object())
                fail(Status::InvalidArgument, fn, ": options->template_vars must be a JSON "
                     "object");
            PrepareChatOptions c;
            c.tokenizer = o.tokenizer;
            c.template_name = o.chat_template ? o.chat_template : "";
            c.vars_json = o.template_vars ? o.template_vars : "";
            c.val_fraction = o.val_fraction;
            switch (o.loss_mask) {
            case TRAINRT_LOSS_MASK_DEFAULT: c.mask = LossMask::Default; break;
            case TRAINRT_LOSS_MASK_ASSISTANT: c.mask = LossMask::Assistant; break;
            case TRAINRT_LOSS_MASK_COMPLETION: c.mask = LossMask::Completion; break;
            case TRAINRT_LOSS_MASK_ALL: c.mask = LossMask::All; break;
            default:
                fail(Status::InvalidArgument, fn, ": options->loss_mask = ", o.loss_mask,
                     " is not a TRAINRT_LOSS_MASK_* value (0 to 3)");
            }
            const PrepareChatResult r = prepare_chat(paths, out_dir, c);
            if (out != nullptr) {
                trainrt_prepare_result full = trainrt_prepare_result TRAINRT_PREPARE_RESULT_INIT;
                full.documents = r.conversations;
                full.train_tokens = r.train_tokens;
                full.val_tokens = r.val_tokens;
                full.token_bytes = r.token_bytes;
                full.vocab_size = r.vocab_size;
                full.eos_id = -1;
                full.train_shards = static_cast<int32_t>(r.train_files.size());
                full.val_shards = static_cast<int32_t>(r.val_files.size());
                full.examples = r.examples;
                full.target_tokens = r.target_tokens;
                full.per_turn = r.per_turn;
                capi::fill_versioned(out, full, fn);
            }
            return TRAINRT_OK;
        }
        PrepareTextOptions p;
        p.tokenizer = o.tokenizer;
        p.jsonl_field = o.jsonl_field ? o.jsonl_field : "";
        p.val_fraction = o.val_fraction;
        if (o.threads < 0)
            fail(Status::InvalidArgument, fn, ": options->threads = ", o.threads,
                 " is negative (0 = all cores)");
        p.threads = o.threads;
        p.shard_tokens = o.shard_tokens;
        if (o.progress != nullptr) {
            const trainrt_prepare_progress_fn cb = o.progress;
            void* payload = o.progress_payload;
            p.progress = [cb, payload](int64_t done, int64_t total) {
                return cb(done, total, payload) == 0;
            };
        }
        const PrepareTextResult r = prepare_text(paths, out_dir, p);
        if (out != nullptr) {
            trainrt_prepare_result full = trainrt_prepare_result TRAINRT_PREPARE_RESULT_INIT;
            full.documents = r.documents;
            full.train_tokens = r.train_tokens;
            full.val_tokens = r.val_tokens;
            full.bytes = r.bytes;
            full.token_bytes = r.token_bytes;
            full.vocab_size = r.vocab_size;
            full.eos_id = r.eos_id;
            full.train_shards = static_cast<int32_t>(r.train_files.size());
            full.val_shards = static_cast<int32_t>(r.val_files.size());
            capi::fill_versioned(out, full, fn);
        }
        return TRAINRT_OK;
    });
}

}  // extern "C"

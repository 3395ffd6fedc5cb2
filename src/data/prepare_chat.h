// prepare --chat: chat JSON lines -> token shards and their loss masks (data/example_set.h),
// rendered with the model folder's chat template (data/chat_examples.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/chat_examples.h"

namespace trt {

struct PrepareChatOptions {
    std::string tokenizer;      // a model folder (tokenizer + tokenizer_config.json / chat_template.jinja)
    std::string template_name;  // of a folder with several named templates ("": "default")
    LossMask mask = LossMask::Default;
    std::string vars_json;      // more template variables: a JSON object ("" = none)
    // The share of the input bytes, from the end, whose lines go to val, in [0, 1).
    double val_fraction = 0.0;
    size_t max_json_line_bytes = size_t(256) << 20;
};

struct PrepareChatResult {
    int64_t conversations = 0;  // lines read
    int64_t examples = 0;       // written (more than conversations with per-turn examples)
    int64_t per_turn = 0;       // conversations written in the per-turn form
    int64_t train_tokens = 0, val_tokens = 0;
    int64_t target_tokens = 0;  // of both splits, the tokens whose loss counts
    int32_t token_bytes = 2;
    int32_t vocab_size = 0;
    std::vector<std::string> train_files, val_files;
};

// Each line of each input is one conversation (blank lines are skipped); it goes to val when
// its first byte lies past the cut. Writes train.bin, val.bin and mask_train.bin, mask_val.bin
// into out_dir as one set (prepare.json; the folder's lock held throughout: data/shard_set.h).
// Throws Error naming file:line for a line it cannot use; nothing is written then.
PrepareChatResult prepare_chat(const std::vector<std::string>& inputs, const std::string& out_dir,
                               const PrepareChatOptions& options);

}  // namespace trt

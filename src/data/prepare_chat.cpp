// prepare --chat (data/prepare_chat.h).
#include "data/prepare_chat.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "chat/chat_template.h"
#include "core/error.h"
#include "data/bounded_lines.h"
#include "data/example_set.h"
#include "data/shard_set.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {

namespace {

int64_t size_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(Status::Io, "prepare: cannot open '", path, "'");
    return static_cast<int64_t>(st.st_size);
}

}  // namespace

PrepareChatResult prepare_chat(const std::vector<std::string>& inputs, const std::string& out_dir,
                               const PrepareChatOptions& options) {
    if (inputs.empty()) fail(Status::InvalidArgument, "prepare: no input files");
    if (!(options.val_fraction >= 0.0 && options.val_fraction < 1.0))
        fail(Status::InvalidArgument, "prepare: val_fraction must be in [0, 1), got ",
             options.val_fraction);
    const tok::TokenizerFiles files = tok::find_tokenizer_files(options.tokenizer, "prepare");
    const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(files.path);
    const chat::FolderTemplate tmpl =
        chat::load_folder_template(options.tokenizer, options.template_name);
    json::Value vars;
    if (!options.vars_json.empty()) {
        vars = json::parse(options.vars_json, "the template variables");
        if (!vars.is_object())
            fail(Status::InvalidArgument, "prepare: the template variables must be a JSON "
                 "object, not ", vars.kind_name());
    }
    ChatOptions chat_options;
    chat_options.mask = options.mask;
    chat_options.extra_vars = options.vars_json.empty() ? nullptr : &vars;

    PrepareChatResult r;
    r.vocab_size = static_cast<int32_t>(tokenizer.id_limit());
    r.token_bytes = tokenizer.id_limit() <= 65536 ? 2 : 4;
    int64_t total = 0;
    for (const std::string& in : inputs) total += size_of(in);
    const int64_t cut =
        options.val_fraction > 0.0
            ? total - static_cast<int64_t>(std::floor(static_cast<double>(total) * options.val_fraction))
            : std::numeric_limits<int64_t>::max();

    const std::unique_ptr<DirLock> lock = open_prepare_folder(out_dir);
    // Masks in the tokens' width, so the four sets commit as one (shard_set.h).
    ShardSet train(out_dir, "train", r.token_bytes, 0), val(out_dir, "val", r.token_bytes, 0);
    ShardSet train_mask(out_dir, "mask_train", r.token_bytes, 0),
        val_mask(out_dir, "mask_val", r.token_bytes, 0);
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    std::vector<uint32_t> mask_wide;
    int64_t offset = 0;
    for (const std::string& in : inputs) {
        std::ifstream f(in, std::ios::binary);
        if (!f) fail(Status::Io, "prepare: cannot open '", in, "'");
        BoundedLines lines(f);
        std::string line;
        bool too_long = false;
        for (int64_t line_no = 1; lines.next(line, options.max_json_line_bytes, &too_long);
             ++line_no) {
            const std::string where = in + ":" + std::to_string(line_no);
            if (too_long)
                fail(Status::InvalidArgument, "prepare: ", where, ": the line is longer than ",
                     options.max_json_line_bytes, " bytes, the most a JSON line may hold");
            const bool to_val = offset >= cut;
            offset += static_cast<int64_t>(line.size()) + 1;
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const json::Value conv = json::parse(line, where);
            bool per_turn = false;
            const std::vector<ChatText> texts =
                chat_texts(tmpl, conv, chat_options, where, &per_turn);
            ++r.conversations;
            r.per_turn += per_turn;
            for (const ChatText& c : texts) {
                encode_chat_text(tokenizer, c, where, ids, mask);
                if (ids.empty()) continue;
                mask_wide.assign(mask.begin(), mask.end());
                for (uint8_t m : mask) r.target_tokens += (m & kMaskTarget) != 0;
                (to_val ? val : train).append(ids);
                (to_val ? val_mask : train_mask).append(mask_wide);
                ++r.examples;
            }
        }
        if (f.bad()) fail(Status::Io, "prepare: cannot read '", in, "'");
    }
    r.train_tokens = train.count();
    r.val_tokens = val.count();
    if (r.train_tokens == 0)
        fail(Status::InvalidArgument, "prepare: the training split would be empty; give more "
             "conversations or a smaller val_fraction");
    if (options.val_fraction > 0.0 && r.val_tokens == 0)
        fail(Status::InvalidArgument, "prepare: the validation split would be empty "
             "(val_fraction ", options.val_fraction, "); give more conversations or val_fraction 0");
    commit_prepared(out_dir, {&train, &val, &train_mask, &val_mask},
                    tok::identity_of(tokenizer, options.tokenizer));
    r.train_files = train.names();
    r.val_files = val.names();
    return r;
}

}  // namespace trt

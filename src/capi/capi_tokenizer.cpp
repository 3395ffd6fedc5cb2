// C API: tokenizers. The handle holds an immutable Tokenizer, so these calls take no busy
// guard: several threads may encode with one tokenizer at once (trainrt.h).
#include <limits>

#include <cstdio>

#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/versioned.h"
#include "io/fs_util.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"


using namespace trt;

extern "C" {

TRAINRT_API trainrt_status trainrt_tokenizer_load(trainrt_tokenizer** out, const char* path) {
    return capi::guarded("trainrt_tokenizer_load", [&] {
        capi::require(out, "trainrt_tokenizer_load", "out");
        capi::require(path, "trainrt_tokenizer_load", "path");
        // A folder (a Hugging Face model folder) stands for its tokenizer.model or .json.
        const tok::TokenizerFiles files = tok::find_tokenizer_files(path, "trainrt_tokenizer_load");
        auto* t = new trainrt_tokenizer{tok::Tokenizer::from_file(files.path)};
        *out = t;
        return TRAINRT_OK;
    });
}

TRAINRT_API void trainrt_tokenizer_destroy(trainrt_tokenizer* tokenizer) { delete tokenizer; }

TRAINRT_API trainrt_status trainrt_tokenizer_encode(int32_t* ids, size_t cap, size_t* needed,
                                                    const trainrt_tokenizer* tokenizer,
                                                    const char* text, size_t len) {
    return capi::guarded("trainrt_tokenizer_encode", [&] {
        capi::require(tokenizer, "trainrt_tokenizer_encode", "tokenizer");
        if (text == nullptr && len != 0)
            fail(Status::InvalidArgument, "trainrt_tokenizer_encode: text is NULL but len is ",
                 len);
        if (ids == nullptr && cap != 0)
            fail(Status::InvalidArgument, "trainrt_tokenizer_encode: ids is NULL but cap is ",
                 cap);
        const std::vector<uint32_t> out =
            tokenizer->tokenizer.encode(std::string_view(text ? text : "", len));
        for (size_t i = 0; i < out.size() && i < cap; i++) ids[i] = static_cast<int32_t>(out[i]);
        if (needed != nullptr) *needed = out.size();
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_tokenizer_decode(char* buf, size_t cap, size_t* needed,
                                                    const trainrt_tokenizer* tokenizer,
                                                    const int32_t* ids, size_t n_ids) {
    return capi::guarded("trainrt_tokenizer_decode", [&] {
        capi::require(tokenizer, "trainrt_tokenizer_decode", "tokenizer");
        if (ids == nullptr && n_ids != 0)
            fail(Status::InvalidArgument, "trainrt_tokenizer_decode: ids is NULL but n_ids is ",
                 n_ids);
        std::vector<uint32_t> v(n_ids);
        for (size_t i = 0; i < n_ids; i++) {
            if (ids[i] < 0)
                fail(Status::InvalidArgument, "trainrt_tokenizer_decode: ids[", i, "] = ", ids[i],
                     " is negative");
            v[i] = static_cast<uint32_t>(ids[i]);
        }
        capi::copy_string(buf, cap, needed, tokenizer->tokenizer.decode(v),
                          "trainrt_tokenizer_decode");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_tokenizer_vocab_size(int32_t* out,
                                                        const trainrt_tokenizer* tokenizer) {
    return capi::guarded("trainrt_tokenizer_vocab_size", [&] {
        capi::require(out, "trainrt_tokenizer_vocab_size", "out");
        capi::require(tokenizer, "trainrt_tokenizer_vocab_size", "tokenizer");
        *out = static_cast<int32_t>(tokenizer->tokenizer.id_limit());
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_tokenizer_token_id(int32_t* out,
                                                      const trainrt_tokenizer* tokenizer,
                                                      const char* token) {
    return capi::guarded("trainrt_tokenizer_token_id", [&] {
        capi::require(out, "trainrt_tokenizer_token_id", "out");
        capi::require(tokenizer, "trainrt_tokenizer_token_id", "tokenizer");
        capi::require(token, "trainrt_tokenizer_token_id", "token");
        uint32_t id = 0;
        *out = tokenizer->tokenizer.find(token, id) ? static_cast<int32_t>(id) : -1;
        return TRAINRT_OK;
    });
}

TRAINRT_API void trainrt_tokenizer_train_options_init(trainrt_tokenizer_train_options* options) {
    if (options == nullptr) return;
    *options = trainrt_tokenizer_train_options TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT;
}

TRAINRT_API void trainrt_tokenizer_train_result_init(trainrt_tokenizer_train_result* result) {
    if (result == nullptr) return;
    *result = trainrt_tokenizer_train_result TRAINRT_TOKENIZER_TRAIN_RESULT_INIT;
}

TRAINRT_API trainrt_status trainrt_tokenizer_train(trainrt_tokenizer_train_result* out,
                                                   const char* const* inputs, size_t n_inputs,
                                                   const char* out_path,
                                                   const trainrt_tokenizer_train_options* options) {
    return capi::guarded("trainrt_tokenizer_train", [&] {
        const char* fn = "trainrt_tokenizer_train";
        capi::require(options, fn, "options");
        capi::require(out_path, fn, "out_path");
        if (inputs == nullptr && n_inputs != 0)
            fail(Status::InvalidArgument, fn, ": inputs is NULL but n_inputs is ", n_inputs);
        if (n_inputs == 0) fail(Status::InvalidArgument, fn, ": no input files (n_inputs is 0)");
        const trainrt_tokenizer_train_options o = capi::read_versioned(
            options, trainrt_tokenizer_train_options TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT, fn);
        if (o.vocab_size <= 0)
            fail(Status::InvalidArgument, fn, ": options->vocab_size = ", o.vocab_size,
                 " (set the size of the vocabulary to train, >= 256 + the special tokens)");
        if (o.min_frequency < 1)
            fail(Status::InvalidArgument, fn, ": options->min_frequency = ", o.min_frequency,
                 " (must be >= 1)");
        if (o.special_tokens == nullptr && o.n_special_tokens != 0)
            fail(Status::InvalidArgument, fn, ": options->special_tokens is NULL but "
                 "n_special_tokens is ", o.n_special_tokens);
        tok::BpeTrainOptions t;
        t.vocab_size = static_cast<uint32_t>(o.vocab_size);
        t.min_frequency = static_cast<uint64_t>(o.min_frequency);
        if (o.special_tokens != nullptr) {
            t.special_tokens.clear();
            for (size_t i = 0; i < o.n_special_tokens; i++) {
                if (o.special_tokens[i] == nullptr)
                    fail(Status::InvalidArgument, fn, ": options->special_tokens[", i,
                         "] must not be NULL");
                t.special_tokens.emplace_back(o.special_tokens[i]);
            }
        }
        const std::string path(out_path);
        if (path.empty()) fail(Status::InvalidArgument, fn, ": out_path is empty");
        // Refused before the (long) training, and again at the rename, which never replaces.
        if (!o.overwrite && path_kind(path) != PathKind::Missing)
            fail(Status::Io, fn, ": ", path,
                 " exists; options->overwrite replaces it (trainrt tokenizer train --force)");
        tok::BpeTrainer trainer(t);
        int64_t bytes = 0;
        for (size_t i = 0; i < n_inputs; i++) {
            if (inputs[i] == nullptr)
                fail(Status::InvalidArgument, fn, ": inputs[", i, "] must not be NULL");
            bytes += static_cast<int64_t>(trainer.add_file(inputs[i]));
        }
        const tok::TrainedBpe bpe = trainer.train();
        const std::string json = tok::to_tokenizer_json(bpe);
        if (o.overwrite) {
            write_file_atomic(path, json);
        } else {
            const std::string fresh = path + ".new";
            {
                AtomicFile f(fresh);
                f.write(json.data(), json.size());
                f.commit();
            }
            try {
                rename_no_replace(fresh, path);
            } catch (...) {
                std::remove(fresh.c_str());
                throw;
            }
        }
        if (out != nullptr) {
            trainrt_tokenizer_train_result full =
                trainrt_tokenizer_train_result TRAINRT_TOKENIZER_TRAIN_RESULT_INIT;
            full.bytes = bytes;
            full.pieces = static_cast<int64_t>(bpe.pieces);
            full.distinct_pieces = static_cast<int64_t>(bpe.distinct_pieces);
            full.vocab_size = static_cast<int32_t>(bpe.special_tokens.size() + bpe.tokens.size());
            full.merges = static_cast<int32_t>(bpe.merges.size());
            capi::fill_versioned(out, full, fn);
        }
        return TRAINRT_OK;
    });
}

}  // extern "C"

// C API: tokenizers. The handle holds an immutable Tokenizer, so these calls take no busy
// guard: several threads may encode with one tokenizer at once (trainrt.h).
#include <limits>

#include "capi/barrier.h"
#include "io/fs_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

struct trainrt_tokenizer {
    trt::tok::Tokenizer tokenizer;
};

using namespace trt;

extern "C" {

TRAINRT_API trainrt_status trainrt_tokenizer_load(trainrt_tokenizer** out, const char* path) {
    return capi::guarded("trainrt_tokenizer_load", [&] {
        capi::require(out, "trainrt_tokenizer_load", "out");
        capi::require(path, "trainrt_tokenizer_load", "path");
        // A folder (a Hugging Face model folder) stands for its tokenizer.json.
        const tok::TokenizerFiles files = tok::find_tokenizer_files(path, "trainrt_tokenizer_load");
        auto* t = new trainrt_tokenizer{tok::Tokenizer::from_file(files.tokenizer_json)};
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

}  // extern "C"

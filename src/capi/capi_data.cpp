// C API: data preparation.
#include "capi/barrier.h"
#include "data/prepare.h"

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

}  // extern "C"

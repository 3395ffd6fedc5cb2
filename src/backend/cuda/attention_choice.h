// The model shapes the CUDA backend does not hand to cuDNN attention, whatever cuDNN could
// plan: reserve() asks this first, and only then CudnnAttention::prepare (cudnn_attention.h).
// The reason becomes accel_status().attention_note (docs/CUDNN_ATTENTION.md).
#pragma once
#include <string>

#include "backend/backend.h"

namespace trt::cuda {

// Why the model of dims `d` runs on the matmul path ("" when cuDNN may be asked).
// sliding_window_ok / grouped_query_ok: accel.attention = "cudnn" was set explicitly, which
// takes the band-mask and grouped-query graphs (built, not yet verified on a GPU).
std::string cudnn_model_refusal(const ModelDims& d, bool sliding_window_ok,
                                bool grouped_query_ok);

}  // namespace trt::cuda

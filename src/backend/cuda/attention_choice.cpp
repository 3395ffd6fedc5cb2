// The model shapes kept off cuDNN attention (attention_choice.h).
#include "backend/cuda/attention_choice.h"

#include "backend/cuda/cuda_ops.h"

namespace trt::cuda {

std::string cudnn_model_refusal(const ModelDims& d, bool sliding_window_ok,
                                bool grouped_query_ok) {
    const int nkv = dims_nkv(d);
    if (d.window > 0 && d.window < d.T && !sliding_window_ok) {
        // The band mask on cuDNN is built (cudnn_sdpa_graph.h) but not yet run on a
        // GPU: only an explicit accel.attention = "cudnn" takes it.
        return "a sliding window (" + std::to_string(d.window) +
               ") shorter than the sequence: cuDNN serves it only when "
               "accel.attention = \"cudnn\" is set (not yet verified on a GPU), "
               "so it runs on the matmul path";
    }
    if (d.documents) {
        // cuDNN's masks here are causal, windows and padding: not an example's start.
        return "the batches pack examples (documents), whose block-diagonal "
               "attention runs on the matmul path";
    }
    if (d.attention_dropout) {
        // cuDNN draws its own dropout masks; the model's must be the CPU's (a counter-
        // based mask per element), which the matmul path applies.
        return "model.dropout drops attention probabilities with the CPU's "
               "masks, which runs on the matmul path";
    }
    if (nkv != d.NH && !grouped_query_ok) {
        // Grouped-query attention on cuDNN is built (cudnn_sdpa_graph.h) but not yet
        // run on a GPU: only an explicit accel.attention = "cudnn" takes it.
        return "this model has " + std::to_string(nkv) + " key/value heads for " +
               std::to_string(d.NH) +
               " query heads (grouped-query attention): cuDNN serves it only "
               "when accel.attention = \"cudnn\" is set (not yet verified on a "
               "GPU), so it runs on the matmul path";
    }
    return "";
}

}  // namespace trt::cuda

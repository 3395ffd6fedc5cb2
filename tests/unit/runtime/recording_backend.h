// RecordingBackend: a CPU backend with CUDA-graph semantics, so whole-step graph capture in
// the session can be proven correct on a machine without a GPU.
//
// Between begin_capture() and end_capture(id) every op is appended to a recording as a
// closure holding its arguments by value (pointers and scalars as passed, structs copied)
// and is NOT executed; replay_graph(id) runs the closures in order. So, exactly as with a
// CUDA graph, a recorded op sees its host arguments frozen at capture time and reads backend
// memory at replay time. Calls that CUDA forbids during a capture (allocation, copies,
// synchronisation, host read-backs, host-staged batches) throw Internal while capturing and,
// as in CUDA, invalidate the capture: end_capture(id >= 0) then throws too, and only
// end_capture(-1) ends it. (free is counted, not thrown: destructors call it.)
//
// Test knobs: on_op sees every op by name; fail_at_op makes a capture throw on its Nth
// recorded op (the session must discard and stay eager), and the bake_* mutants freeze at
// capture time a per-step value the real backend reads from its memory at replay time — the
// comparison tests must catch them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace trt::graph_test {

// Test knobs (see the top of this file).
struct RecorderKnobs {
    // >= 0: the capture's op with this index (0-based, within one capture) throws
    // Internal instead of being recorded — in the fail_in_capture-th capture (1-based; 0 =
    // in every capture).
    int64_t fail_at_op = -1;
    int fail_in_capture = 1;
    // Mutant: sample_window / sample_random replay with the window start / step they
    // saw at capture time (a backend that took them as host values).
    bool bake_sampler_inputs = false;
    // Mutant: adamw_step replays with the lr and step of capture time.
    bool bake_lr = false;
    // Mutant: dropout masks replay with the step of capture time.
    bool bake_dropout_step = false;
    // A device of this many bytes (0: unbounded): an alloc past it throws OutOfMemory, as a
    // GPU's would. device_memory: capabilities() says the memory is the backend's own.
    size_t memory_cap = 0;
    bool device_memory = false;
    // Called with each op's name as the op runs or is recorded (capturing() tells which),
    // before it does: e.g. to request a stop at a chosen micro-batch.
    std::function<void(const char* op)> on_op;
};

class RecordingBackend final : public Backend {
public:
    using Knobs = RecorderKnobs;

    explicit RecordingBackend(std::unique_ptr<Backend> inner, Knobs knobs = {})
        : inner_(std::move(inner)), knobs_(knobs) {}

    // ---- what the recorder saw
    int begin_captures() const { return begin_captures_; }
    int captures() const { return captures_; }        // end_capture(id >= 0), any id
    int discards() const { return discards_; }        // end_capture(-1)
    int replays() const { return replays_; }          // any id
    int captures(int id) const { return count(captures_by_id_, id); }
    int replays(int id) const { return count(replays_by_id_, id); }
    int64_t ops_recorded() const { return ops_recorded_; }  // over every capture
    size_t graph_size(int id) const {
        auto it = graphs_.find(id);
        return it == graphs_.end() ? 0 : it->second.size();
    }
    bool capturing() const { return capturing_; }
    // Forbidden calls made while capturing (each also threw, except free).
    int violations() const { return violations_; }
    const std::string& last_violation() const { return last_violation_; }
    // Ids of the graphs held (captured and not replaced), ascending.
    std::vector<int> graph_ids() const {
        std::vector<int> ids;
        for (const auto& kv : graphs_) ids.push_back(kv.first);
        return ids;
    }
    // Names of the ops of graph id, in order (for diagnostics).
    std::vector<std::string> graph_op_names(int id) const {
        std::vector<std::string> out;
        auto it = graphs_.find(id);
        if (it != graphs_.end())
            for (const Op& op : it->second) out.push_back(op.name);
        return out;
    }

    // ---- forwarded queries (never recorded)
    BackendCaps capabilities() const override {
        BackendCaps c = inner_->capabilities();
        c.device_memory = c.device_memory || knobs_.device_memory;
        return c;
    }
    const char* name() const override { return inner_->name(); }
    int num_threads() const override { return inner_->num_threads(); }
    std::string device_name() const override { return inner_->device_name(); }
    DType activation_dtype() const override { return inner_->activation_dtype(); }
    AccelStatus accel_status() const override {
        AccelStatus s = inner_->accel_status();
        s.graphs = true;
        return s;
    }
    size_t bytes_in_use() const override { return inner_->bytes_in_use(); }
    size_t bytes_reserved() const override { return inner_->bytes_reserved(); }
    size_t attention_saved_floats(int B, int T, int C, int NH, int NKV) const override {
        return inner_->attention_saved_floats(B, T, C, NH, NKV);
    }
    size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV) const override {
        return inner_->attention_scratch_floats(B, T, C, NH, NKV);
    }

    // ---- not capturable
    void* alloc(size_t bytes, const char* what) override {
        refuse_if_capturing("alloc");
        if (knobs_.memory_cap > 0 && inner_->bytes_in_use() + bytes > knobs_.memory_cap)
            fail(Status::OutOfMemory, "out of memory: ", what, " (", bytes, " bytes) past the ",
                 knobs_.memory_cap, "-byte device");
        return inner_->alloc(bytes, what);
    }
    // Destructors free, so a free during a capture is counted as a violation, not thrown.
    void free(void* ptr) override {
        if (capturing_) {
            ++violations_;
            last_violation_ = invalidated_by_ = "free during a graph capture";
        }
        inner_->free(ptr);
    }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("copy_to_device");
        inner_->copy_to_device(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("copy_to_host");
        inner_->copy_to_host(dst, src, bytes);
    }
    void synchronize() override {
        refuse_if_capturing("synchronize");
        inner_->synchronize();
    }
    void reserve(const ModelDims& dims) override {
        refuse_if_capturing("reserve");
        inner_->reserve(dims);
    }
    size_t working_copy_bytes(size_t n) const override { return inner_->working_copy_bytes(n); }
    void register_params(const float* params, size_t n) override {
        refuse_if_capturing("register_params");
        inner_->register_params(params, n);
    }
    void read_scalars_async(int slot, const StepScalars* s) override {
        refuse_if_capturing("read_scalars_async");
        inner_->read_scalars_async(slot, s);
    }
    bool scalars_ready(int slot) override {
        refuse_if_capturing("scalars_ready");
        return inner_->scalars_ready(slot);
    }
    StepScalars read_scalars(int slot) override {
        refuse_if_capturing("read_scalars");
        return inner_->read_scalars(slot);
    }
    void load_rows(int32_t* inputs, int32_t* targets, const int32_t* host_rows, int B,
                   int T) override {
        refuse_if_capturing("load_rows");
        inner_->load_rows(inputs, targets, host_rows, B, T);
    }
    void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions,
                    const int32_t* host_inputs, const int32_t* host_targets,
                    const int32_t* host_positions, int B, int T) override {
        refuse_if_capturing("load_batch");
        inner_->load_batch(inputs, targets, positions, host_inputs, host_targets,
                           host_positions, B, T);
    }
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("upload_step_inputs");
        inner_->upload_step_inputs(dst, src, bytes);
    }

    // ---- ops: recorded while capturing, run at once otherwise
    void zero(void* ptr, size_t bytes) override {
        op("zero", [=, be = be()] { be->zero(ptr, bytes); });
    }
    void encoder_forward(Act out, const int32_t* inputs, const float* wte, const float* wpe,
                         int B, int T, int C, const int32_t* pos) override {
        op("encoder_forward",
           [=, be = be()] { be->encoder_forward(out, inputs, wte, wpe, B, T, C, pos); });
    }
    void encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* inputs,
                          int B, int T, int C, const int32_t* pos) override {
        op("encoder_backward",
           [=, be = be()] { be->encoder_backward(dwte, dwpe, dout, inputs, B, T, C, pos); });
    }
    void layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp,
                           const float* w, const float* b, int N, int C) override {
        op("layernorm_forward",
           [=, be = be()] { be->layernorm_forward(out, mean, rstd, inp, w, b, N, C); });
    }
    void layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout,
                            ConstAct inp, const float* w, const float* mean,
                            const float* rstd, int N, int C) override {
        op("layernorm_backward", [=, be = be()] {
            be->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
        });
    }
    void matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias,
                        int N, int K, int M, WeightLayout layout) override {
        op("matmul_forward", [=, be = be()] {
            be->matmul_forward(out, inp, weight, bias, N, K, M, layout);
        });
    }
    void matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                         ConstAct inp, const float* weight, int N, int K, int M,
                         WeightLayout layout) override {
        op("matmul_backward", [=, be = be()] {
            be->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout);
        });
    }
    void attention_forward(Act out, float* saved, ConstAct qkv, int B, int T, int C,
                           int NH, int NKV, int window, const int32_t* pos) override {
        op("attention_forward", [=, be = be()] {
            be->attention_forward(out, saved, qkv, B, T, C, NH, NKV, window, pos);
        });
    }
    void attention_cached_forward(Act out, ConstAct qkv, float* k_cache, float* v_cache,
                                  int pos0, int n, int NH, int NKV, int hs, int max_T,
                                  int window) override {
        op("attention_cached_forward", [=, be = be()] {
            be->attention_cached_forward(out, qkv, k_cache, v_cache, pos0, n, NH, NKV, hs,
                                         max_T, window);
        });
    }
    void attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                            const float* saved, int B, int T, int C, int NH, int NKV,
                            int window, const int32_t* pos) override {
        op("attention_backward", [=, be = be()] {
            be->attention_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV, window,
                                   pos);
        });
    }
    void attention_dropout_forward(Act out, float* saved, ConstAct qkv, int B, int T, int C,
                                   int NH, int NKV, const DropoutMask& m, int window,
                                   const int32_t* pos) override {
        op("attention_dropout_forward", [=, be = be()] {
            be->attention_dropout_forward(out, saved, qkv, B, T, C, NH, NKV, m, window, pos);
        });
    }
    void attention_dropout_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                                    const float* saved, int B, int T, int C, int NH, int NKV,
                                    const DropoutMask& m, int window,
                                    const int32_t* pos) override {
        op("attention_dropout_backward", [=, be = be()] {
            be->attention_dropout_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV, m,
                                           window, pos);
        });
    }
    void rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N,
                         int C, float eps) override {
        op("rmsnorm_forward",
           [=, be = be()] { be->rmsnorm_forward(out, rstd, inp, w, N, C, eps); });
    }
    void rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp,
                          const float* w, const float* rstd, int N, int C) override {
        op("rmsnorm_backward",
           [=, be = be()] { be->rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C); });
    }
    void residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a,
                                  ConstAct b, const float* w, int N, int C,
                                  float eps) override {
        op("residual_rmsnorm_forward", [=, be = be()] {
            be->residual_rmsnorm_forward(res_out, out, rstd, a, b, w, N, C, eps);
        });
    }
    void rope_forward(Act qkv, const float* cos, const float* sin, int B, int T, int NH,
                      int NKV, int hs, int pos0, const int32_t* pos) override {
        op("rope_forward", [=, be = be()] {
            be->rope_forward(qkv, cos, sin, B, T, NH, NKV, hs, pos0, pos);
        });
    }
    void rope_backward(Act dqkv, const float* cos, const float* sin, int B, int T, int NH,
                       int NKV, int hs, int pos0, const int32_t* pos) override {
        op("rope_backward", [=, be = be()] {
            be->rope_backward(dqkv, cos, sin, B, T, NH, NKV, hs, pos0, pos);
        });
    }
    void swiglu_forward(Act out, ConstAct inp, int N, int F) override {
        op("swiglu_forward", [=, be = be()] { be->swiglu_forward(out, inp, N, F); });
    }
    void swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N,
                         int F) override {
        op("swiglu_backward",
           [=, be = be()] { be->swiglu_backward(dinp, inp, dout, N, F); });
    }
    void residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd,
                                    ConstAct a, ConstAct b, const float* bb,
                                    const float* w, const float* bias, int N,
                                    int C) override {
        op("residual_layernorm_forward", [=, be = be()] {
            be->residual_layernorm_forward(res_out, out, mean, rstd, a, b, bb, w, bias, N, C);
        });
    }
    void matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                             const float* bias, int N, int K, int M) override {
        op("matmul_gelu_forward", [=, be = be()] {
            be->matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M);
        });
    }
    void gelu_forward(Act out, ConstAct inp, size_t n) override {
        op("gelu_forward", [=, be = be()] { be->gelu_forward(out, inp, n); });
    }
    void add_columns(Act out, ConstAct in, float scale, int N, int W, int c0,
                     int M) override {
        op("add_columns", [=, be = be()] { be->add_columns(out, in, scale, N, W, c0, M); });
    }
    void copy_columns(Act out, ConstAct in, float scale, int N, int W, int c0,
                      int M) override {
        op("copy_columns", [=, be = be()] { be->copy_columns(out, in, scale, N, W, c0, M); });
    }
    void dropout(Act out, ConstAct in, size_t n, const DropoutMask& m) override {
        if (capturing_ && knobs_.bake_dropout_step) {
            const StepScalars baked = *m.scalars;  // mutant: the step of capture time
            op("dropout(baked step)", [=, be = be()] {
                DropoutMask frozen = m;
                frozen.scalars = &baked;
                be->dropout(out, in, n, frozen);
            });
            return;
        }
        op("dropout", [=, be = be()] { be->dropout(out, in, n, m); });
    }
    void gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout,
                            int N, int M) override {
        op("gelu_backward_bias",
           [=, be = be()] { be->gelu_backward_bias(dinp, dbias, inp, dout, N, M); });
    }
    void classifier_forward_backward(Act logits, float* losses, const int32_t* targets,
                                     int N, int V, int Vp, float dloss, bool write_grad,
                                     const StepScalars* scalars = nullptr) override {
        op("classifier_forward_backward", [=, be = be()] {
            be->classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss,
                                            write_grad, scalars);
        });
    }
    void begin_step(StepScalars* s, float lr, int64_t step) override {
        op("begin_step", [=, be = be()] { be->begin_step(s, lr, step); });
    }
    void accumulate_loss(StepScalars* s, const float* losses, size_t n) override {
        op("accumulate_loss", [=, be = be()] { be->accumulate_loss(s, losses, n); });
    }
    void grad_norm_clip(StepScalars* s, const float* grads, size_t n, float max_norm) override {
        op("grad_norm_clip", [=, be = be()] { be->grad_norm_clip(s, grads, n, max_norm); });
    }
    void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                    const ParamSegments& seg, const AdamWConfig& hp,
                    const StepScalars* s) override {
        if (capturing_ && knobs_.bake_lr) {
            // Mutant: lr and step as they are now (backend memory is host memory here).
            const float baked_lr = s->lr;
            const int64_t baked_step = s->step;
            op("adamw_step(baked lr)", [=, be = be()] {
                StepScalars frozen = *s;
                frozen.lr = baked_lr;
                frozen.step = baked_step;
                be->adamw_step(params, grads, m, v, n, seg, hp, &frozen);
            });
            return;
        }
        op("adamw_step",
           [=, be = be()] { be->adamw_step(params, grads, m, v, n, seg, hp, s); });
    }
    void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                       float* m_scale, float* v_scale, const Q8Tables* tables, size_t n,
                       const ParamSegments& seg, const AdamWConfig& hp,
                       const StepScalars* s) override {
        op("adamw_step_q8", [=, be = be()] {
            be->adamw_step_q8(params, grads, m8, v8, m_scale, v_scale, tables, n, seg, hp, s);
        });
    }
    void end_step(StepScalars* s, const LossScalePolicy& policy) override {
        op("end_step", [=, be = be()] { be->end_step(s, policy); });
    }
    void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       const int64_t* start, int B, int T) override {
        if (capturing_ && knobs_.bake_sampler_inputs) {
            const int64_t baked = *start;  // mutant: the window of capture time
            op("sample_window(baked start)", [=, be = be()] {
                be->sample_window(inputs, targets, data, &baked, B, T);
            });
            return;
        }
        op("sample_window",
           [=, be = be()] { be->sample_window(inputs, targets, data, start, B, T); });
    }
    void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       uint64_t seed, const StepScalars* s, int64_t micro_step, int B,
                       int T, int64_t row0) override {
        if (capturing_ && knobs_.bake_sampler_inputs) {
            const StepScalars baked = *s;  // mutant: the step of capture time
            op("sample_random(baked step)", [=, be = be()] {
                be->sample_random(inputs, targets, data, seed, &baked, micro_step, B, T, row0);
            });
            return;
        }
        op("sample_random", [=, be = be()] {
            be->sample_random(inputs, targets, data, seed, s, micro_step, B, T, row0);
        });
    }

    // ---- graphs
    bool supports_graphs() const override { return true; }
    void begin_capture() override {
        if (capturing_)
            fail(Status::Internal, "begin_capture: a capture is already in progress");
        capturing_ = true;
        invalidated_by_.clear();
        recording_.clear();
        ++begin_captures_;
    }
    void end_capture(int id) override {
        if (!capturing_) fail(Status::Internal, "end_capture(", id, "): no capture in progress");
        capturing_ = false;
        if (id < 0) {
            ++discards_;
            recording_.clear();
            return;
        }
        if (!invalidated_by_.empty()) {
            recording_.clear();
            fail(Status::Internal, "end_capture(", id, "): the capture was invalidated (",
                 invalidated_by_, ")");
        }
        graphs_[id] = std::move(recording_);
        recording_.clear();
        ++captures_;
        ++captures_by_id_[id];
    }
    void replay_graph(int id) override {
        refuse_if_capturing("replay_graph");
        auto it = graphs_.find(id);
        if (it == graphs_.end()) fail(Status::Internal, "replay_graph(", id, "): no such graph");
        ++replays_;
        ++replays_by_id_[id];
        for (const Op& op : it->second) op.run();
    }

private:
    struct Op {
        std::string name;
        std::function<void()> run;
    };

    Backend* be() const { return inner_.get(); }
    static int count(const std::map<int, int>& m, int id) {
        auto it = m.find(id);
        return it == m.end() ? 0 : it->second;
    }

    void refuse_if_capturing(const char* what) {
        if (!capturing_) return;
        ++violations_;
        last_violation_ = invalidated_by_ =
            cat(what, " is not capturable (a graph capture is in progress)");
        fail(Status::Internal, last_violation_);
    }

    void op(const char* name, std::function<void()> run) {
        if (knobs_.on_op) knobs_.on_op(name);
        if (!capturing_) {
            run();
            return;
        }
        const bool this_capture =
            knobs_.fail_in_capture == 0 || knobs_.fail_in_capture == begin_captures_;
        if (this_capture && static_cast<int64_t>(recording_.size()) == knobs_.fail_at_op)
            fail(Status::Internal, "injected capture failure at recorded op ",
                 knobs_.fail_at_op, " (", name, ")");
        recording_.push_back(Op{name, std::move(run)});
        ++ops_recorded_;
    }

    std::unique_ptr<Backend> inner_;
    Knobs knobs_;
    bool capturing_ = false;
    std::string invalidated_by_;  // the forbidden call that spoiled this capture ("" = none)
    std::vector<Op> recording_;
    std::map<int, std::vector<Op>> graphs_;
    int begin_captures_ = 0, captures_ = 0, discards_ = 0, replays_ = 0;
    std::map<int, int> captures_by_id_, replays_by_id_;
    int64_t ops_recorded_ = 0;
    int violations_ = 0;
    std::string last_violation_;
};

}  // namespace trt::graph_test

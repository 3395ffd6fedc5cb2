// OpDispatch: a Backend that forwards everything to another one and sends every op of
// backend_ops.def and step_ops.def through one function, dispatch() — the single place where a
// wrapper times an op, counts it, or records it for replay (the tests' RecordingBackend), with
// no change to the backends. Also the base of a decorator that runs some ops itself: the CPU
// backend's bf16/fp16 modes (cpu_lowp.h) override every op on activations and leave the rest
// (batches, the optimizer step: a few calls a step) to come through here.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace trt {

class OpDispatch : public Backend, public OptimizerStep {
public:
    explicit OpDispatch(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

    Backend& inner() const { return *inner_; }

    // ---- forwarded as they are
    BackendCaps capabilities() const override { return inner_->capabilities(); }
    const char* name() const override { return inner_->name(); }
    int num_threads() const override { return inner_->num_threads(); }
    std::string device_name() const override { return inner_->device_name(); }
    AccelStatus accel_status() const override { return inner_->accel_status(); }
    DType activation_dtype() const override { return inner_->activation_dtype(); }
    void* alloc(size_t bytes, const char* what = "buffer") override {
        return inner_->alloc(bytes, what);
    }
    void free(void* ptr) override { inner_->free(ptr); }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        inner_->copy_to_device(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        inner_->copy_to_host(dst, src, bytes);
    }
    void synchronize() override { inner_->synchronize(); }
    size_t bytes_in_use() const override { return inner_->bytes_in_use(); }
    size_t bytes_reserved() const override { return inner_->bytes_reserved(); }
    void reserve(const ModelDims& dims) override { inner_->reserve(dims); }
    void register_params(const float* params, size_t n) override {
        inner_->register_params(params, n);
    }
    size_t working_copy_bytes(size_t n) const override { return inner_->working_copy_bytes(n); }
    size_t op_scratch_bytes(const ModelDims& dims) const override {
        return inner_->op_scratch_bytes(dims);
    }
    size_t attention_saved_floats(const AttentionShape& a) const override {
        return inner_->attention_saved_floats(a);
    }
    size_t attention_scratch_floats(const AttentionShape& a) const override {
        return inner_->attention_scratch_floats(a);
    }
    bool supports(OpKind op, const ModelDims& dims, Precision precision) const override {
        return inner_->supports(op, dims, precision);
    }
    // The inner backend's optimizer step, wrapped as its ops are (null where it has none).
    OptimizerStep* optimizer_step() override { return inner_->optimizer_step() ? this : nullptr; }
    void read_scalars_async(int slot, const StepScalars* s) override {
        optimizer_step_of(*inner_).read_scalars_async(slot, s);
    }
    bool scalars_ready(int slot) override { return optimizer_step_of(*inner_).scalars_ready(slot); }
    StepScalars read_scalars(int slot) override {
        return optimizer_step_of(*inner_).read_scalars(slot);
    }
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        inner_->upload_step_inputs(dst, src, bytes);
    }
    bool read_back_async(int slot, const void* src, size_t bytes) override {
        return inner_->read_back_async(slot, src, bytes);
    }
    void read_back(int slot, void* dst, size_t bytes) override {
        inner_->read_back(slot, dst, bytes);
    }
    bool supports_graphs() const override { return inner_->supports_graphs(); }
    void begin_capture() override { inner_->begin_capture(); }
    void end_capture(int id) override { inner_->end_capture(id); }
    void replay_graph(int id) override { inner_->replay_graph(id); }
    void drop_graph(int id) override { inner_->drop_graph(id); }
    DeviceCollectives* collectives(std::string* why) override { return inner_->collectives(why); }
    void annotate_layer(int layer) override { inner_->annotate_layer(layer); }
    OpTimer* op_timer() override { return inner_->op_timer(); }
    std::vector<OpChoice> op_choices() const override { return inner_->op_choices(); }

    // ---- every op: its arguments, held by value, in a closure that runs it on the inner
    // backend, handed to dispatch().
#define TRT_OP(name, params, args) \
    void name params override { dispatch(OpKind::name, [=, be = inner_.get()] { be->name args; }); }
#include "backend/backend_ops.def"
#undef TRT_OP
    // (An inner backend without an optimizer step refuses here, by name, as optimizer_step_of
    // does: optimizer_step() is null then, but a caller holding this object may still call.)
#define TRT_OP(name, params, args)                                                         \
    void name params override {                                                            \
        OptimizerStep* st = &optimizer_step_of(*inner_);                                   \
        dispatch(OpKind::name, [=] { st->name args; });                                    \
    }
#include "backend/step_ops.def"
#undef TRT_OP

protected:
    // Runs `run` (the op) — now, or, for a recorder, later and perhaps again. The default
    // runs it at once.
    virtual void dispatch(OpKind /*op*/, std::function<void()> run) { run(); }

private:
    std::unique_ptr<Backend> inner_;
};

}  // namespace trt

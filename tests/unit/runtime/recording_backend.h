// RecordingBackend: a CPU backend with CUDA-graph semantics, so whole-step graph capture in
// the session can be proven correct on a machine without a GPU. An OpDispatch wrapper
// (backend/op_dispatch.h): every op reaches dispatch() as a closure, recorded or run.
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

#include "backend/op_dispatch.h"
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
    // > 0: capabilities() gives this head_chunk_logits (a device's larger head chunk).
    size_t head_chunk_logits = 0;
    // Called with each op's name as the op runs or is recorded (capturing() tells which),
    // before it does: e.g. to request a stop at a chosen micro-batch.
    std::function<void(const char* op)> on_op;
};

class RecordingBackend final : public OpDispatch {
public:
    using Knobs = RecorderKnobs;

    explicit RecordingBackend(std::unique_ptr<Backend> inner, Knobs knobs = {})
        : OpDispatch(std::move(inner)), knobs_(knobs) {}

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
        BackendCaps c = inner().capabilities();
        c.device_memory = c.device_memory || knobs_.device_memory;
        if (knobs_.head_chunk_logits > 0) c.head_chunk_logits = knobs_.head_chunk_logits;
        return c;
    }
    AccelStatus accel_status() const override {
        AccelStatus s = inner().accel_status();
        s.graphs = true;
        return s;
    }

    // ---- not capturable
    void* alloc(size_t bytes, const char* what) override {
        refuse_if_capturing("alloc");
        if (knobs_.memory_cap > 0 && inner().bytes_in_use() + bytes > knobs_.memory_cap)
            fail(Status::OutOfMemory, "out of memory: ", what, " (", bytes, " bytes) past the ",
                 knobs_.memory_cap, "-byte device");
        return inner().alloc(bytes, what);
    }
    // Destructors free, so a free during a capture is counted as a violation, not thrown.
    void free(void* ptr) override {
        if (capturing_) {
            ++violations_;
            last_violation_ = invalidated_by_ = "free during a graph capture";
        }
        inner().free(ptr);
    }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("copy_to_device");
        inner().copy_to_device(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("copy_to_host");
        inner().copy_to_host(dst, src, bytes);
    }
    void synchronize() override {
        refuse_if_capturing("synchronize");
        inner().synchronize();
    }
    void reserve(const ModelDims& dims) override {
        refuse_if_capturing("reserve");
        inner().reserve(dims);
    }
    void register_params(const float* params, size_t n) override {
        refuse_if_capturing("register_params");
        inner().register_params(params, n);
    }
    void read_scalars_async(int slot, const StepScalars* s) override {
        refuse_if_capturing("read_scalars_async");
        OpDispatch::read_scalars_async(slot, s);
    }
    bool scalars_ready(int slot) override {
        refuse_if_capturing("scalars_ready");
        return OpDispatch::scalars_ready(slot);
    }
    StepScalars read_scalars(int slot) override {
        refuse_if_capturing("read_scalars");
        return OpDispatch::read_scalars(slot);
    }
    void load_rows(int32_t* inputs, int32_t* targets, const int32_t* host_rows, int B,
                   int T) override {
        refuse_if_capturing("load_rows");
        inner().load_rows(inputs, targets, host_rows, B, T);
    }
    void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions,
                    const int32_t* host_inputs, const int32_t* host_targets,
                    const int32_t* host_positions, int B, int T) override {
        refuse_if_capturing("load_batch");
        inner().load_batch(inputs, targets, positions, host_inputs, host_targets,
                           host_positions, B, T);
    }
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        refuse_if_capturing("upload_step_inputs");
        inner().upload_step_inputs(dst, src, bytes);
    }
    bool read_back_async(int slot, const void* src, size_t bytes) override {
        refuse_if_capturing("read_back_async");
        return inner().read_back_async(slot, src, bytes);
    }

    // ---- ops: recorded while capturing, run at once otherwise (OpDispatch sends each one
    // here as a closure holding its arguments by value); the mutants below, by hand.
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
        OpDispatch::dropout(out, in, n, m);
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
                trt::optimizer_step_of(*be).adamw_step(params, grads, m, v, n, seg, hp, &frozen);
            });
            return;
        }
        OpDispatch::adamw_step(params, grads, m, v, n, seg, hp, s);
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
        OpDispatch::sample_window(inputs, targets, data, start, B, T);
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
        OpDispatch::sample_random(inputs, targets, data, seed, s, micro_step, B, T, row0);
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
    void drop_graph(int id) override { graphs_.erase(id); }
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

    Backend* be() const { return &inner(); }
    void dispatch(OpKind kind, std::function<void()> run) override { op(op_name(kind), std::move(run)); }
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

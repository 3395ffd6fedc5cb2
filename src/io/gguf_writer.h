// A GGUF file (version 3: ggml's model file, the one llama.cpp and Ollama load), written once
// and atomically (io/fs_util.h AtomicFile: nothing half-written ever carries the name).
// docs/FORMATS.md "GGUF" has the layout:
//
//   "GGUF" u32 version=3 · u64 n_tensors · u64 n_kv
//   n_kv x   string key · u32 value type · value        (strings: u64 length + UTF-8 bytes;
//                                                        arrays: u32 type · u64 count · items)
//   n_tensors x  string name · u32 n_dims · u64 ne[n_dims] · u32 ggml type · u64 offset
//   zero padding to the alignment (32), then each tensor's bytes at its offset (relative to
//   that point, a multiple of 32), each padded to 32.
//
// ne[0] is the innermost (fastest-varying) dimension: a PyTorch tensor of shape [rows, cols]
// has ne = {cols, rows}. add_tensor takes the PyTorch shape and reverses it. Little-endian.
// Everything is checked when it is added (a key twice, an empty array, a name llama.cpp cannot
// hold, a row that is not whole Q8_0 blocks): write() then only encodes and writes. llama.cpp
// checks value types exactly (a count is UINT32, an epsilon FLOAT32, a flag BOOL): the caller
// picks the adder that matches what it reads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/ggml_blocks.h"

namespace trt::gguf {

// Metadata value types (gguf_type).
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

inline constexpr uint32_t kVersion = 3;
inline constexpr uint64_t kAlignment = 32;   // general.alignment's default
inline constexpr size_t kMaxNameBytes = 63;  // ggml's GGML_MAX_NAME (64) less the NUL
inline constexpr size_t kMaxDims = 4;        // GGML_MAX_DIMS

class Writer {
public:
    void add_u32(const std::string& key, uint32_t v);
    void add_i32(const std::string& key, int32_t v);
    void add_u64(const std::string& key, uint64_t v);
    void add_f32(const std::string& key, float v);
    void add_bool(const std::string& key, bool v);
    void add_string(const std::string& key, const std::string& v);
    void add_strings(const std::string& key, const std::vector<std::string>& v);
    void add_i32s(const std::string& key, const std::vector<int32_t>& v);
    void add_f32s(const std::string& key, const std::vector<float>& v);

    // A tensor of PyTorch `shape` (outermost first) whose data[numel] the caller keeps alive
    // until write(), stored as `type`.
    void add_tensor(const std::string& name, const std::vector<int64_t>& shape, TensorType type,
                    const float* data);

    // Writes the file at `path` (a temporary beside it, fsynced, renamed). Error(Io) on a
    // failed write, with nothing left at `path` that was not there before.
    void write(const std::string& path) const;

    size_t tensor_count() const { return tensors_.size(); }
    size_t kv_count() const { return keys_.size(); }

private:
    struct Tensor {
        std::string name;
        std::vector<uint64_t> ne;  // innermost first
        TensorType type;
        const float* data;
        uint64_t numel;
        uint64_t offset;  // in the data section
    };
    void begin_kv(const std::string& key, ValueType type, size_t items = 0);
    void put_string(const std::string& s);

    std::vector<uint8_t> kv_;  // the encoded key/value records, in the order added
    std::vector<std::string> keys_;  // one per record of kv_
    std::vector<Tensor> tensors_;
    uint64_t data_bytes_ = 0;  // the data section so far (padded)
};

}  // namespace trt::gguf

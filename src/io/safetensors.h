// safetensors read/write (docs/FORMATS.md §2). The reader validates everything before any
// byte of tensor data is trusted: header length bound, JSON, dtypes, shapes (no overflow),
// offsets in range, non-overlapping and covering the whole data buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace trt {

const char* dtype_name(DType d);  // "F32", "BF16", ...
size_t dtype_size(DType d);

struct TensorInfo {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte range in the data buffer
    int64_t numel() const;
};

class SafetensorsFile {
public:
    // Throws Error(Io) if unreadable, Error(Format) naming the file and the fault.
    static SafetensorsFile open(const std::string& path);
    // Parse an in-memory image (tests, fuzzing). name is used in messages.
    static SafetensorsFile from_bytes(std::vector<uint8_t> bytes, const std::string& name);

    SafetensorsFile();
    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::vector<TensorInfo>& tensors() const;
    const TensorInfo* find(const std::string& name) const;  // nullptr if absent
    const std::map<std::string, std::string>& metadata() const;
    const std::string& source_name() const;
    const uint8_t* data(const TensorInfo& t) const;  // raw little-endian bytes
    // Converts F32/BF16/F16/F64 to fp32 into out[numel]; Error(Format) for other dtypes.
    // The tensor's mapped pages are given back afterwards (resident memory holds what the
    // caller copied, not the file).
    void read_f32(const TensorInfo& t, float* out) const;
    // Elements [first, first + n) of the tensor (row-major), the same way, into out[n].
    void read_f32_range(const TensorInfo& t, size_t first, size_t n, float* out) const;

private:
    void convert_f32(const TensorInfo& t, const uint8_t* p, size_t n, float* out) const;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct TensorToWrite {
    std::string name;
    DType dtype = DType::F32;       // F32 or BF16 (converted from the fp32 source)
    std::vector<int64_t> shape;
    const float* data = nullptr;     // numel fp32 values
};

// Writes a safetensors file: path.tmp, fsync, rename. Tensors are laid out in the given order.
// "[768, 2304]": a shape in error messages.
std::string shape_text(const std::vector<int64_t>& shape);

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace trt

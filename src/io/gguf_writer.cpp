#include "io/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "io/fs_util.h"

namespace trt::gguf {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {  // little-endian, whatever the host
    using U = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    static_assert(sizeof(U) == sizeof(T));
    U u;
    std::memcpy(&u, &v, sizeof(T));
    for (size_t i = 0; i < sizeof(T); i++) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
}

uint64_t padded(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// "[768, 2304]"
std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

void Writer::begin_kv(const std::string& key, ValueType type, size_t items) {
    if (key.empty()) fail(Status::InvalidArgument, "gguf: an empty metadata key");
    // gguf-py refuses to write an empty array and some readers reject one: leave the key out.
    if (type == ValueType::Array && items == 0)
        fail(Status::InvalidArgument, "gguf: metadata key '", key, "' is an empty array");
    if (std::find(keys_.begin(), keys_.end(), key) != keys_.end())
        fail(Status::InvalidArgument, "gguf: metadata key '", key, "' added twice");
    keys_.push_back(key);
    put_string(key);
    put<uint32_t>(kv_, static_cast<uint32_t>(type));
}

void Writer::put_string(const std::string& s) {
    put<uint64_t>(kv_, s.size());
    kv_.insert(kv_.end(), s.begin(), s.end());
}

void Writer::add_u32(const std::string& key, uint32_t v) {
    begin_kv(key, ValueType::U32);
    put(kv_, v);
}
void Writer::add_i32(const std::string& key, int32_t v) {
    begin_kv(key, ValueType::I32);
    put(kv_, v);
}
void Writer::add_u64(const std::string& key, uint64_t v) {
    begin_kv(key, ValueType::U64);
    put(kv_, v);
}
void Writer::add_f32(const std::string& key, float v) {
    begin_kv(key, ValueType::F32);
    put(kv_, v);
}
void Writer::add_bool(const std::string& key, bool v) {
    begin_kv(key, ValueType::Bool);
    put<uint8_t>(kv_, v ? 1 : 0);
}
void Writer::add_string(const std::string& key, const std::string& v) {
    begin_kv(key, ValueType::String);
    put_string(v);
}
void Writer::add_strings(const std::string& key, const std::vector<std::string>& v) {
    begin_kv(key, ValueType::Array, v.size());
    put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::String));
    put<uint64_t>(kv_, v.size());
    for (const std::string& s : v) put_string(s);
}
void Writer::add_i32s(const std::string& key, const std::vector<int32_t>& v) {
    begin_kv(key, ValueType::Array, v.size());
    put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::I32));
    put<uint64_t>(kv_, v.size());
    for (int32_t x : v) put(kv_, x);
}
void Writer::add_f32s(const std::string& key, const std::vector<float>& v) {
    begin_kv(key, ValueType::Array, v.size());
    put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::F32));
    put<uint64_t>(kv_, v.size());
    for (float x : v) put(kv_, x);
}

void Writer::add_tensor(const std::string& name, const std::vector<int64_t>& shape, TensorType type,
                        const float* data) {
    if (name.empty() || name.size() > kMaxNameBytes)
        fail(Status::InvalidArgument, "gguf: tensor name '", name, "' is ", name.size(),
             " bytes; llama.cpp holds 1 to ", kMaxNameBytes);
    for (const Tensor& t : tensors_)
        if (t.name == name) fail(Status::InvalidArgument, "gguf: tensor '", name, "' added twice");
    if (shape.empty() || shape.size() > kMaxDims)
        fail(Status::InvalidArgument, "gguf: tensor '", name, "' has ", shape.size(),
             " dimensions; GGUF holds 1 to ", kMaxDims);
    uint64_t numel = 1;
    for (int64_t d : shape) {
        if (d <= 0)
            fail(Status::InvalidArgument, "gguf: tensor '", name, "' has shape ", shape_text(shape),
                 "; every dimension must be positive");
        numel *= static_cast<uint64_t>(d);
    }
    const uint64_t row = static_cast<uint64_t>(shape.back());  // ne[0]
    if (row % block_elements(type) != 0)
        fail(Status::InvalidArgument, "gguf: tensor '", name, "' ", shape_text(shape),
             " cannot be ", type_name(type), ": its rows of ", row, " are not whole blocks of ",
             block_elements(type), "; write it as F16, BF16 or F32");
    if (type == TensorType::Q4_0)
        fail(Status::InvalidArgument, "gguf: tensor '", name,
             "': this writer does not encode Q4_0 (F32, F16, BF16, Q8_0)");
    TRT_CHECK(data != nullptr, "gguf: tensor '", name, "' has no data");
    Tensor t{name, {}, type, data, numel, data_bytes_};
    t.ne.assign(shape.rbegin(), shape.rend());
    data_bytes_ += padded(encoded_bytes(type, numel));
    tensors_.push_back(std::move(t));
}

void Writer::write(const std::string& path) const {
    std::vector<uint8_t> head;
    head.insert(head.end(), {'G', 'G', 'U', 'F'});
    put<uint32_t>(head, kVersion);
    put<uint64_t>(head, tensors_.size());
    put<uint64_t>(head, keys_.size());
    head.insert(head.end(), kv_.begin(), kv_.end());
    for (const Tensor& t : tensors_) {
        put<uint64_t>(head, t.name.size());
        head.insert(head.end(), t.name.begin(), t.name.end());
        put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
        for (uint64_t d : t.ne) put<uint64_t>(head, d);
        put<uint32_t>(head, static_cast<uint32_t>(t.type));
        put<uint64_t>(head, t.offset);
    }
    head.resize(padded(head.size()), 0);

    AtomicFile f(path);
    f.write(head.data(), head.size());
    // Each tensor encoded a slice of rows at a time: a bounded buffer, whatever its size.
    constexpr uint64_t kSliceElements = uint64_t{1} << 22;
    std::vector<uint8_t> buf;
    const uint8_t zeros[kAlignment] = {};
    for (const Tensor& t : tensors_) {
        const uint64_t row = t.ne[0];
        const uint64_t rows_per_slice = std::max<uint64_t>(1, kSliceElements / row);
        for (uint64_t r = 0; r * row < t.numel; r += rows_per_slice) {
            const uint64_t n = std::min(rows_per_slice * row, t.numel - r * row);
            buf.resize(encoded_bytes(t.type, n));
            encode(t.type, t.data + r * row, n, buf.data());
            f.write(buf.data(), buf.size());
        }
        const uint64_t bytes = encoded_bytes(t.type, t.numel);
        f.write(zeros, padded(bytes) - bytes);
    }
    f.commit();
}

}  // namespace trt::gguf

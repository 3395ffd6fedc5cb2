// A GGUF reader written for the tests from the format's definition (docs/FORMATS.md "GGUF"),
// independent of src/io/gguf_writer.cpp: every read bounds-checked, every value decoded, so a
// test can say what a file holds. Throws std::runtime_error on anything malformed.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gguf_test {

struct Value {
    uint32_t type = 0;  // gguf_type: 0 u8 .. 12 f64; 8 string; 9 array
    uint64_t u = 0;     // unsigned integers and bool
    int64_t i = 0;      // signed integers
    double f = 0;       // f32, f64
    std::string s;
    uint32_t item_type = 0;  // arrays
    std::vector<Value> items;
};

struct TensorInfo {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as stored
    uint32_t type = 0;
    uint64_t offset = 0;  // in the data section
};

struct File {
    uint32_t version = 0;
    std::vector<std::string> keys;  // in file order
    std::map<std::string, Value> kv;
    std::vector<TensorInfo> tensors;
    uint64_t data_start = 0;
    std::vector<uint8_t> bytes;

    const TensorInfo& tensor(const std::string& name) const {
        for (const TensorInfo& t : tensors)
            if (t.name == name) return t;
        throw std::runtime_error("no tensor " + name);
    }
    // The tensor's values as floats, in the stored order (ne[0] fastest).
    std::vector<float> values(const std::string& name) const;
};

class Cursor {
public:
    explicit Cursor(const std::vector<uint8_t>& b) : b_(b) {}
    template <typename T>
    T get() {
        need(sizeof(T));
        uint64_t u = 0;
        for (size_t k = 0; k < sizeof(T); k++) u |= static_cast<uint64_t>(b_[at_ + k]) << (8 * k);
        at_ += sizeof(T);
        T v;
        if constexpr (sizeof(T) == 8) {
            std::memcpy(&v, &u, 8);
        } else {
            const auto small = static_cast<uint32_t>(u);
            if constexpr (sizeof(T) == 4) std::memcpy(&v, &small, 4);
            if constexpr (sizeof(T) == 2) {
                const auto h = static_cast<uint16_t>(u);
                std::memcpy(&v, &h, 2);
            }
            if constexpr (sizeof(T) == 1) {
                const auto c = static_cast<uint8_t>(u);
                std::memcpy(&v, &c, 1);
            }
        }
        return v;
    }
    std::string str() {
        const uint64_t n = get<uint64_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
        at_ += n;
        return s;
    }
    uint64_t at() const { return at_; }

private:
    void need(uint64_t n) const {
        if (n > b_.size() || at_ > b_.size() - n) throw std::runtime_error("gguf: truncated");
    }
    const std::vector<uint8_t>& b_;
    uint64_t at_ = 0;
};

inline Value read_value(Cursor& c, uint32_t type, int depth = 0) {
    Value v;
    v.type = type;
    switch (type) {
        case 0:
            v.u = c.get<uint8_t>();
            break;
        case 1:
            v.i = c.get<int8_t>();
            break;
        case 2:
            v.u = c.get<uint16_t>();
            break;
        case 3:
            v.i = c.get<int16_t>();
            break;
        case 4:
            v.u = c.get<uint32_t>();
            break;
        case 5:
            v.i = c.get<int32_t>();
            break;
        case 6:
            v.f = c.get<float>();
            break;
        case 7: {
            v.u = c.get<uint8_t>();
            if (v.u > 1) throw std::runtime_error("gguf: bool not 0/1");
            break;
        }
        case 8:
            v.s = c.str();
            break;
        case 9: {
            if (depth > 0) throw std::runtime_error("gguf: nested array");
            v.item_type = c.get<uint32_t>();
            const uint64_t n = c.get<uint64_t>();
            if (n > (uint64_t{1} << 24)) throw std::runtime_error("gguf: array too long");
            for (uint64_t k = 0; k < n; k++) v.items.push_back(read_value(c, v.item_type, 1));
            break;
        }
        case 10:
            v.u = c.get<uint64_t>();
            break;
        case 11:
            v.i = c.get<int64_t>();
            break;
        case 12:
            v.f = c.get<double>();
            break;
        default:
            throw std::runtime_error("gguf: value type " + std::to_string(type));
    }
    return v;
}

inline File read_file(const std::string& path) {
    File f;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    f.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    Cursor c(f.bytes);
    if (c.get<uint32_t>() != 0x46554747u) throw std::runtime_error("gguf: bad magic");
    f.version = c.get<uint32_t>();
    const uint64_t n_tensors = c.get<uint64_t>(), n_kv = c.get<uint64_t>();
    for (uint64_t k = 0; k < n_kv; k++) {
        const std::string key = c.str();
        const uint32_t type = c.get<uint32_t>();
        if (f.kv.count(key)) throw std::runtime_error("gguf: key twice: " + key);
        f.keys.push_back(key);
        f.kv[key] = read_value(c, type);
    }
    for (uint64_t k = 0; k < n_tensors; k++) {
        TensorInfo t;
        t.name = c.str();
        const uint32_t dims = c.get<uint32_t>();
        if (dims == 0 || dims > 4) throw std::runtime_error("gguf: dims");
        for (uint32_t d = 0; d < dims; d++) t.ne.push_back(c.get<uint64_t>());
        t.type = c.get<uint32_t>();
        t.offset = c.get<uint64_t>();
        f.tensors.push_back(t);
    }
    uint64_t align = 32;
    if (f.kv.count("general.alignment")) align = f.kv["general.alignment"].u;
    f.data_start = (c.at() + align - 1) / align * align;
    if (f.data_start > f.bytes.size()) throw std::runtime_error("gguf: no data section");
    return f;
}

inline uint64_t numel(const TensorInfo& t) {
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    return n;
}

inline float half_to_float(uint16_t h) {  // IEEE binary16, by its definition
    const int sign = h >> 15, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
    return sign ? -v : v;
}

inline std::vector<float> File::values(const std::string& name) const {
    const TensorInfo& t = tensor(name);
    const uint64_t n = numel(t);
    std::vector<float> out(n);
    const uint8_t* p = bytes.data() + data_start + t.offset;
    auto u16 = [&](uint64_t at) { return static_cast<uint16_t>(p[at] | (p[at + 1] << 8)); };
    uint64_t size = 0;
    switch (t.type) {
        case 0:
            size = 4 * n;
            break;
        case 1:
        case 30:
            size = 2 * n;
            break;
        case 8:
            size = n / 32 * 34;
            break;
        default:
            throw std::runtime_error("gguf: tensor type " + std::to_string(t.type));
    }
    if (data_start + t.offset + size > bytes.size())
        throw std::runtime_error("gguf: data past end");
    for (uint64_t k = 0; k < n; k++) {
        if (t.type == 0) {
            uint32_t u = 0;
            for (int b = 0; b < 4; b++) u |= static_cast<uint32_t>(p[4 * k + b]) << (8 * b);
            std::memcpy(&out[k], &u, 4);
        } else if (t.type == 1) {
            out[k] = half_to_float(u16(2 * k));
        } else if (t.type == 30) {
            const uint32_t u = static_cast<uint32_t>(u16(2 * k)) << 16;
            std::memcpy(&out[k], &u, 4);
        } else {  // Q8_0: d (fp16) then 32 int8 per block
            const uint64_t block = k / 32;
            const float d = half_to_float(u16(block * 34));
            out[k] = d * static_cast<float>(static_cast<int8_t>(p[block * 34 + 2 + k % 32]));
        }
    }
    return out;
}

}  // namespace gguf_test

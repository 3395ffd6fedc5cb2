#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"
#include "io/file_sniff.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "io/mapped_file.h"

// The file format is little-endian and both the reader (F32/F64 memcpy) and the writer (F32
// written straight from memory) rely on the host matching it.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace trt {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same bound as the reference implementation

struct DTypeName {
    DType dtype;
    const char* name;
    size_t size;
};
constexpr DTypeName kDTypes[] = {
    {DType::F32, "F32", 4}, {DType::BF16, "BF16", 2}, {DType::F16, "F16", 2},
    {DType::F64, "F64", 8}, {DType::I64, "I64", 8},   {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},     {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};

bool dtype_from_name(const std::string& s, DType& out) {
    for (const DTypeName& d : kDTypes)
        if (s == d.name) {
            out = d.dtype;
            return true;
        }
    return false;
}

std::string shape_str(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// numel of a shape, or false if it exceeds INT64_MAX (hostile shapes). A zero dimension makes
// the tensor empty whatever the other dims are, so it is checked first.
bool checked_numel(const std::vector<int64_t>& shape, uint64_t& out) {
    for (int64_t d : shape)
        if (d == 0) {
            out = 0;
            return true;
        }
    uint64_t n = 1;
    const uint64_t lim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    for (int64_t d : shape) {
        const auto ud = static_cast<uint64_t>(d);
        if (n > lim / ud) return false;
        n *= ud;
    }
    out = n;
    return true;
}

}  // namespace

const char* dtype_name(DType d) {
    for (const DTypeName& x : kDTypes)
        if (x.dtype == d) return x.name;
    return "?";
}

size_t dtype_size(DType d) {
    for (const DTypeName& x : kDTypes)
        if (x.dtype == d) return x.size;
    return 0;
}

int64_t TensorInfo::numel() const {
    uint64_t n = 0;
    return checked_numel(shape, n) ? static_cast<int64_t>(n) : -1;
}

// ------------------------------------------------------------------------------------ reader

struct SafetensorsFile::Impl {
    std::string name;
    std::vector<uint8_t> bytes;  // from_bytes image
    MappedFile map;              // open(): the whole file, read-only
    const uint8_t* data = nullptr;  // start of the data buffer (after the header)
    uint64_t data_len = 0;
    std::vector<TensorInfo> tensors;
    std::unordered_map<std::string, size_t> index;
    std::map<std::string, std::string> metadata;

    // A read tensor's pages given back (io/mapped_file.h; nothing for a from_bytes image).
    void release(const uint8_t* p, size_t n) const { map.release(p, n); }

    [[noreturn]] void bad(const std::string& what) const { fail(Status::Format, name, ": ", what); }

    void parse(const uint8_t* p, size_t size);
    void parse_entry(const std::string& key, const json::Value& v);
};

void SafetensorsFile::Impl::parse(const uint8_t* p, size_t size) {
    if (size < 8) bad(cat("file is ", size, " bytes, too short for the 8-byte header length"));
    uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | p[k];
    // A file of another kind altogether (a config.json given as weights, a PyTorch .bin)
    // fails these first checks: say what it is rather than only what its bytes mean here.
    const auto what_it_is = [&] {
        const std::string kind = sniff_file_kind(p, std::min<size_t>(size, 4096));
        return kind.empty() || kind == "a safetensors file"
                   ? std::string()
                   : cat("; this is not a safetensors file but ", kind,
                         " (a Hugging Face model folder holds config.json and "
                         "model.safetensors: name the folder or the .safetensors file)");
    };
    if (n < 2) bad(cat("header length ", n, " is too small to hold a JSON object", what_it_is()));
    if (n > kMaxHeaderBytes)
        bad(cat("header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes",
                what_it_is()));
    if (n > size - 8)
        bad(cat("header length ", n, " extends beyond the end of the file (", size - 8,
                " bytes after the length)", what_it_is()));
    data = p + 8 + n;
    data_len = size - 8 - n;

    const std::string_view text(reinterpret_cast<const char*>(p + 8), static_cast<size_t>(n));
    const json::Value root = json::parse(text, name + ": header");
    if (!root.is_object()) bad(cat("header is a JSON ", root.kind_name(), ", expected an object"));

    bool have_meta = false;
    for (const json::Member& m : root.obj) {
        if (m.key == "__metadata__") {
            if (have_meta) bad("duplicate \"__metadata__\" entry");
            have_meta = true;
            if (!m.value.is_object())
                bad(cat("\"__metadata__\" is a JSON ", m.value.kind_name(), ", expected an object"));
            for (const json::Member& mm : m.value.obj) {
                if (!mm.value.is_string())
                    bad(cat("\"__metadata__\" key '", mm.key, "' has a non-string value (",
                            mm.value.kind_name(), "); metadata must map strings to strings"));
                if (!metadata.emplace(mm.key, mm.value.s).second)
                    bad(cat("duplicate \"__metadata__\" key '", mm.key, "'"));
            }
            continue;
        }
        parse_entry(m.key, m.value);
    }

    // Sorted by (begin, end), the tensors must tile [0, data_len) exactly: each starts where
    // the previous one ended. Anything else is an overlap, a gap or trailing bytes.
    std::vector<const TensorInfo*> order;
    order.reserve(tensors.size());
    for (const TensorInfo& t : tensors) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t expected = 0;
    const TensorInfo* prev = nullptr;
    for (const TensorInfo* t : order) {
        if (t->begin < expected)
            bad(cat("tensor '", t->name, "' data_offsets [", t->begin, ", ", t->end,
                    ") overlap tensor '", prev->name, "' [", prev->begin, ", ", prev->end, ")"));
        if (t->begin > expected)
            bad(cat("gap in the data buffer: bytes [", expected, ", ", t->begin,
                    ") belong to no tensor (before tensor '", t->name, "')"));
        expected = t->end;
        prev = t;
    }
    if (expected != data_len)
        bad(cat("data buffer is ", data_len, " bytes but the tensors cover only ", expected,
                " (trailing unused bytes [", expected, ", ", data_len, "))"));
}

void SafetensorsFile::Impl::parse_entry(const std::string& key, const json::Value& v) {
    const std::string where = cat("tensor '", key, "'");
    if (!v.is_object()) bad(cat(where, ": entry is a JSON ", v.kind_name(), ", expected an object"));
    const json::Value* jdtype = nullptr;
    const json::Value* jshape = nullptr;
    const json::Value* joffs = nullptr;
    for (const json::Member& f : v.obj) {
        const json::Value** slot = f.key == "dtype"          ? &jdtype
                                   : f.key == "shape"        ? &jshape
                                   : f.key == "data_offsets" ? &joffs
                                                             : nullptr;
        if (!slot) bad(cat(where, ": unknown key '", f.key, "' (expected dtype, shape, data_offsets)"));
        if (*slot) bad(cat(where, ": duplicate key '", f.key, "'"));
        *slot = &f.value;
    }
    if (!jdtype) bad(cat(where, ": missing \"dtype\""));
    if (!jshape) bad(cat(where, ": missing \"shape\""));
    if (!joffs) bad(cat(where, ": missing \"data_offsets\""));

    TensorInfo t;
    t.name = key;
    if (!jdtype->is_string()) bad(cat(where, ": dtype is a JSON ", jdtype->kind_name(), ", expected a string"));
    if (!dtype_from_name(jdtype->s, t.dtype))
        bad(cat(where, ": unknown dtype '", jdtype->s,
                "' (supported: F32 BF16 F16 F64 I64 I32 I16 I8 U8 BOOL)"));

    if (!jshape->is_array()) bad(cat(where, ": shape is a JSON ", jshape->kind_name(), ", expected an array"));
    for (size_t i = 0; i < jshape->arr.size(); ++i) {
        const json::Value& d = jshape->arr[i];
        int64_t dim = 0;
        if (!d.get_i64(dim) || dim < 0) {
            if (d.kind == json::Value::Kind::Int)
                bad(cat(where, ": shape[", i, "] = ", d.i, " is negative"));
            if (d.kind == json::Value::Kind::Uint)
                bad(cat(where, ": shape[", i, "] = ", d.u, " is too large"));
            bad(cat(where, ": shape[", i, "] is a JSON ", d.kind_name(),
                    ", expected a non-negative integer"));
        }
        t.shape.push_back(dim);
    }
    uint64_t numel = 0;
    if (!checked_numel(t.shape, numel))
        bad(cat(where, ": shape ", shape_str(t.shape), " has more than 2^63-1 elements"));
    const uint64_t esz = dtype_size(t.dtype);
    if (numel > std::numeric_limits<uint64_t>::max() / esz)
        bad(cat(where, ": ", jdtype->s, " ", shape_str(t.shape), " byte size overflows 64 bits"));
    const uint64_t nbytes = numel * esz;

    if (!joffs->is_array() || joffs->arr.size() != 2)
        bad(cat(where, ": data_offsets must be an array of two integers [begin, end]"));
    if (!joffs->arr[0].get_u64(t.begin) || !joffs->arr[1].get_u64(t.end))
        bad(cat(where, ": data_offsets must be non-negative integers"));
    if (t.begin > t.end)
        bad(cat(where, ": data_offsets [", t.begin, ", ", t.end, ") are reversed (begin > end)"));
    if (t.end > data_len)
        bad(cat(where, ": data_offsets [", t.begin, ", ", t.end, ") end beyond the data buffer of ",
                data_len, " bytes"));
    if (t.end - t.begin != nbytes)
        bad(cat(where, ": data_offsets [", t.begin, ", ", t.end, ") hold ", t.end - t.begin,
                " bytes but ", jdtype->s, " ", shape_str(t.shape), " needs ", nbytes));

    if (!index.emplace(key, tensors.size()).second) bad(cat("duplicate tensor name '", key, "'"));
    tensors.push_back(std::move(t));
}

SafetensorsFile::SafetensorsFile() : impl_(std::make_unique<Impl>()) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    SafetensorsFile f;
    Impl& im = *f.impl_;
    im.name = path;
    // Mapped so multi-GB checkpoints are paged in on demand instead of copied.
    im.map = MappedFile::open(path);
    if (im.map.size() < 8)
        im.bad(cat("file is ", im.map.size(), " bytes, too short for the 8-byte header length"));
    im.parse(im.map.data(), im.map.size());
    return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
    SafetensorsFile f;
    f.impl_->name = name;
    f.impl_->bytes = std::move(bytes);
    f.impl_->parse(f.impl_->bytes.data(), f.impl_->bytes.size());
    return f;
}

const std::vector<TensorInfo>& SafetensorsFile::tensors() const { return impl_->tensors; }

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    const auto it = impl_->index.find(name);
    return it == impl_->index.end() ? nullptr : &impl_->tensors[it->second];
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return impl_->metadata; }
const std::string& SafetensorsFile::source_name() const { return impl_->name; }

const uint8_t* SafetensorsFile::data(const TensorInfo& t) const {
    // Guards against a TensorInfo taken from another file.
    if (t.begin > t.end || t.end > impl_->data_len)
        fail(Status::InvalidArgument, impl_->name, ": tensor '", t.name, "' is not from this file");
    return impl_->data + t.begin;
}

void SafetensorsFile::read_f32(const TensorInfo& t, float* out) const {
    const uint8_t* p = data(t);
    const int64_t n64 = t.numel();
    if (n64 < 0 || static_cast<uint64_t>(n64) * dtype_size(t.dtype) != t.end - t.begin)
        fail(Status::InvalidArgument, impl_->name, ": tensor '", t.name, "' is not from this file");
    const auto n = static_cast<size_t>(n64);
    convert_f32(t, p, n, out);
    impl_->release(p, t.end - t.begin);
}

void SafetensorsFile::read_f32_range(const TensorInfo& t, size_t first, size_t n,
                                     float* out) const {
    const uint8_t* p = data(t);
    const int64_t n64 = t.numel();
    const size_t size = dtype_size(t.dtype);
    if (n64 < 0 || static_cast<uint64_t>(n64) * size != t.end - t.begin)
        fail(Status::InvalidArgument, impl_->name, ": tensor '", t.name, "' is not from this file");
    if (first > static_cast<size_t>(n64) || n > static_cast<size_t>(n64) - first)
        fail(Status::InvalidArgument, impl_->name, ": elements ", first, "..", first + n,
             " of tensor '", t.name, "' (", n64, " elements)");
    convert_f32(t, p + first * size, n, out);
    impl_->release(p + first * size, n * size);
}

void SafetensorsFile::convert_f32(const TensorInfo& t, const uint8_t* p, size_t n,
                                  float* out) const {
    // memcpy for every element read: the data buffer has no alignment guarantee.
    switch (t.dtype) {
        case DType::F32:
            if (n) std::memcpy(out, p, n * 4);
            return;
        case DType::BF16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                const uint32_t bits = static_cast<uint32_t>(h) << 16;
                std::memcpy(out + i, &bits, 4);
            }
            return;
        case DType::F16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                out[i] = fp16_to_float(h);
            }
            return;
        case DType::F64:
            for (size_t i = 0; i < n; ++i) {
                double d;
                std::memcpy(&d, p + 8 * i, 8);
                out[i] = static_cast<float>(d);
            }
            return;
        default:
            fail(Status::Format, impl_->name, ": tensor '", t.name, "' has dtype ", dtype_name(t.dtype),
                 ", expected a float tensor (F32, BF16, F16 or F64)");
    }
}

// ------------------------------------------------------------------------------------ writer

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    // Validate everything before touching the filesystem.
    std::set<std::string> names;
    std::vector<uint64_t> numels;
    numels.reserve(tensors.size());
    for (const TensorToWrite& t : tensors) {
        if (t.name.empty()) fail(Status::InvalidArgument, path, ": tensor with an empty name");
        if (t.name == "__metadata__")
            fail(Status::InvalidArgument, path, ": '__metadata__' is reserved, not a tensor name");
        if (!json::valid_utf8(t.name))
            fail(Status::InvalidArgument, path, ": tensor name is not valid UTF-8");
        if (!names.insert(t.name).second)
            fail(Status::InvalidArgument, path, ": duplicate tensor name '", t.name, "'");
        if (t.dtype != DType::F32 && t.dtype != DType::BF16)
            fail(Status::InvalidArgument, path, ": tensor '", t.name, "': cannot write dtype ",
                 dtype_name(t.dtype), " (F32 or BF16 only)");
        for (int64_t d : t.shape)
            if (d < 0)
                fail(Status::InvalidArgument, path, ": tensor '", t.name, "': negative dimension in shape ",
                     shape_str(t.shape));
        uint64_t n = 0;
        // The fp32 source must fit in memory, so numel * 4 cannot legitimately overflow.
        if (!checked_numel(t.shape, n) || n > std::numeric_limits<uint64_t>::max() / 4)
            fail(Status::InvalidArgument, path, ": tensor '", t.name, "': shape ", shape_str(t.shape),
                 " is too large");
        if (n > 0 && !t.data)
            fail(Status::InvalidArgument, path, ": tensor '", t.name, "' has no data");
        numels.push_back(n);
    }
    for (const auto& kv : metadata)
        if (!json::valid_utf8(kv.first) || !json::valid_utf8(kv.second))
            fail(Status::InvalidArgument, path, ": metadata key '", kv.first, "' or its value is not valid UTF-8");

    std::string header = "{";
    bool first = true;
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (const auto& kv : metadata) {
            if (!first) header += ',';
            first = false;
            header += json::quote(kv.first) + ':' + json::quote(kv.second);
        }
        header += '}';
        first = false;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorToWrite& t = tensors[i];
        const uint64_t nbytes = numels[i] * dtype_size(t.dtype);
        if (!first) header += ',';
        first = false;
        header += json::quote(t.name) + ":{\"dtype\":\"" + dtype_name(t.dtype) + "\",\"shape\":[";
        for (size_t k = 0; k < t.shape.size(); ++k) {
            if (k) header += ',';
            header += std::to_string(t.shape[k]);
        }
        header += cat("],\"data_offsets\":[", offset, ",", offset + nbytes, "]}");
        offset += nbytes;
    }
    header += '}';
    // Pad so the data buffer starts 8-byte aligned in the file (8 + N is a multiple of 8).
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > kMaxHeaderBytes)
        fail(Status::InvalidArgument, path, ": header of ", header.size(), " bytes exceeds the limit");

    // path.tmp, fsync, rename, fsync the directory (io/fs_util.h); an exception anywhere
    // below removes the partial tmp file.
    AtomicFile out(path);
    uint8_t lenbuf[8];
    const uint64_t hlen = header.size();
    for (int k = 0; k < 8; ++k) lenbuf[k] = static_cast<uint8_t>(hlen >> (8 * k));
    out.write(lenbuf, 8);
    out.write(header.data(), header.size());

    std::vector<uint16_t> buf;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorToWrite& t = tensors[i];
        const uint64_t n = numels[i];
        if (n == 0) continue;
        if (t.dtype == DType::F32) {
            out.write(t.data, static_cast<size_t>(n) * 4);
            continue;
        }
        // BF16: convert in bounded chunks so a large tensor needs no full-size copy.
        constexpr uint64_t kChunk = uint64_t{1} << 20;
        buf.resize(static_cast<size_t>(std::min(n, kChunk)));
        for (uint64_t s = 0; s < n; s += kChunk) {
            const auto m = static_cast<size_t>(std::min(kChunk, n - s));
            for (size_t k = 0; k < m; ++k) buf[k] = float_to_bf16(t.data[s + k]);
            out.write(buf.data(), m * 2);
        }
    }
    out.commit();
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

}  // namespace trt

#include "io/gguf_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/error.h"
#include "io/mapped_file.h"

namespace trt::gguf {
namespace {

// ggml_type ids with their block (elements, bytes), for bounding every tensor of a file; the
// ones decode() reads are F32, F16, BF16, Q8_0, Q4_0. Types without a row here (the IQ ones)
// cannot be bounded or read: such a tensor is listed with bytes = 0 and refused when read.
struct TypeInfo {
    uint32_t id;
    const char* name;
    uint32_t block, bytes;
};
constexpr TypeInfo kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 0, 0},
    {17, "IQ2_XS", 0, 0},     {18, "IQ3_XXS", 0, 0},    {19, "IQ1_S", 0, 0},
    {20, "IQ4_NL", 0, 0},     {21, "IQ3_S", 0, 0},      {22, "IQ2_S", 0, 0},
    {23, "IQ4_XS", 0, 0},     {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 0, 0},      {30, "BF16", 1, 2},       {31, "Q4_0_4_4", 0, 0},
    {32, "Q4_0_4_8", 0, 0},   {33, "Q4_0_8_8", 0, 0},   {34, "TQ1_0", 0, 0},
    {35, "TQ2_0", 0, 0},      {36, "IQ4_NL_4_4", 0, 0}, {37, "IQ4_NL_4_8", 0, 0},
    {38, "IQ4_NL_8_8", 0, 0}, {39, "MXFP4", 0, 0},
};

const TypeInfo* type_info(uint32_t id) {
    for (const TypeInfo& t : kTypes)
        if (t.id == id) return &t;
    return nullptr;
}

bool decodable(uint32_t id) { return id == 0 || id == 1 || id == 2 || id == 8 || id == 30; }

// A bounded little-endian cursor over the header; every read checks the bytes left.
struct Cursor {
    const uint8_t* p;
    size_t size;
    size_t at = 0;
    const std::string& name;

    [[noreturn]] void bad(const std::string& what) const {
        fail(Status::Format, name, ": ", what, " (at byte ", at, " of ", size,
             "; not a GGUF file llama.cpp would load, or a truncated one)");
    }
    size_t left() const { return size - at; }
    const uint8_t* take(size_t n, const char* what) {
        if (n > left()) bad(cat(what, " needs ", n, " bytes, ", left(), " left"));
        const uint8_t* r = p + at;
        at += n;
        return r;
    }
    template <typename T>
    T get(const char* what) {
        const uint8_t* b = take(sizeof(T), what);
        uint64_t v = 0;
        for (size_t i = 0; i < sizeof(T); i++) v |= static_cast<uint64_t>(b[i]) << (8 * i);
        T out;
        if constexpr (sizeof(T) == 8) {
            std::memcpy(&out, &v, 8);
        } else {
            const auto narrow = static_cast<uint32_t>(v);
            if constexpr (sizeof(T) == 4) {
                std::memcpy(&out, &narrow, 4);
            } else {
                const auto n16 = static_cast<uint16_t>(v);
                if constexpr (sizeof(T) == 2)
                    std::memcpy(&out, &n16, 2);
                else
                    out = static_cast<T>(b[0]);
            }
        }
        return out;
    }
    std::string str(const char* what) {
        const uint64_t n = get<uint64_t>(what);
        if (n > left()) bad(cat(what, " is ", n, " bytes long, ", left(), " left"));
        const uint8_t* b = take(static_cast<size_t>(n), what);
        return std::string(reinterpret_cast<const char*>(b), static_cast<size_t>(n));
    }
};

// The smallest encoding of one value of `t` (arrays: their type and count), so a count can be
// bounded by the bytes left before anything is allocated for it.
size_t min_bytes(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::Bool:
            return 1;
        case ValueType::U16:
        case ValueType::I16:
            return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32:
            return 4;
        case ValueType::U64:
        case ValueType::I64:
        case ValueType::F64:
        case ValueType::String:
            return 8;
        case ValueType::Array:
            return 12;
    }
    return 1;
}

bool known_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

Value read_scalar(Cursor& c, ValueType t, const std::string& key) {
    Value v;
    v.type = t;
    switch (t) {
        case ValueType::U8:
            v.u = c.get<uint8_t>("a U8 value");
            break;
        case ValueType::I8:
            v.i = static_cast<int8_t>(c.get<uint8_t>("an I8 value"));
            break;
        case ValueType::U16:
            v.u = c.get<uint16_t>("a U16 value");
            break;
        case ValueType::I16:
            v.i = c.get<int16_t>("an I16 value");
            break;
        case ValueType::U32:
            v.u = c.get<uint32_t>("a U32 value");
            break;
        case ValueType::I32:
            v.i = c.get<int32_t>("an I32 value");
            break;
        case ValueType::U64:
            v.u = c.get<uint64_t>("a U64 value");
            break;
        case ValueType::I64:
            v.i = c.get<int64_t>("an I64 value");
            break;
        case ValueType::F32:
            v.f = c.get<float>("an F32 value");
            break;
        case ValueType::F64:
            v.f = c.get<double>("an F64 value");
            break;
        case ValueType::Bool: {
            const uint8_t b = c.get<uint8_t>("a BOOL value");
            if (b > 1) c.bad(cat("key '", key, "': a BOOL of ", int(b)));
            v.u = b;
            break;
        }
        case ValueType::String:
            v.s = c.str("a string value");
            break;
        case ValueType::Array:
            c.bad(cat("key '", key, "': an array inside an array"));
    }
    return v;
}

// Array items a file may hold in all: each costs a Value (about 100 bytes) however few bytes it
// takes in the file. A tokenizer's arrays (tokens, scores, types, merges) hold a few million.
constexpr uint64_t kMaxArrayItems = uint64_t{1} << 22;

Value read_value(Cursor& c, uint32_t type, const std::string& key, uint64_t& items_left) {
    if (!known_type(type)) c.bad(cat("key '", key, "' has value type ", type, " (0..12 exist)"));
    const auto t = static_cast<ValueType>(type);
    if (t != ValueType::Array) return read_scalar(c, t, key);
    Value v;
    v.type = t;
    const uint32_t item = c.get<uint32_t>("an array's item type");
    if (!known_type(item)) c.bad(cat("key '", key, "': an array of value type ", item));
    v.item_type = static_cast<ValueType>(item);
    if (v.item_type == ValueType::Array) c.bad(cat("key '", key, "': an array of arrays"));
    const uint64_t n = c.get<uint64_t>("an array's length");
    if (n > c.left() / min_bytes(v.item_type))
        c.bad(cat("key '", key, "': an array of ", n, " items in ", c.left(), " bytes"));
    if (n > items_left)
        c.bad(cat("key '", key, "': an array of ", n, " items, beyond the ", kMaxArrayItems,
                  " array items this reader holds in all"));
    items_left -= n;
    v.items.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; i++) v.items.push_back(read_scalar(c, v.item_type, key));
    return v;
}

const char* value_type_name(ValueType t) {
    static const char* const names[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                        "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                        "UINT64", "INT64",   "FLOAT64"};
    const auto i = static_cast<size_t>(t);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

}  // namespace

bool is_gguf_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    char magic[4] = {};
    const ssize_t n = ::read(fd, magic, 4);
    ::close(fd);
    return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

std::string type_id_name(uint32_t type) {
    const TypeInfo* t = type_info(type);
    return t ? t->name : cat("type ", type);
}

uint64_t TensorEntry::numel() const {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;  // bounded when the file was read
    return n;
}
uint64_t TensorEntry::rows() const { return ne.empty() ? 0 : numel() / ne[0]; }
std::vector<int64_t> TensorEntry::shape() const {
    return std::vector<int64_t>(ne.rbegin(), ne.rend());
}

struct Reader::Impl {
    std::string name;
    std::vector<uint8_t> bytes;  // from_bytes' image
    MappedFile map;              // open(): the whole file, read-only
    const uint8_t* base = nullptr;
    size_t size = 0;
    uint64_t data_start = 0;  // where the data section begins
    uint32_t version = 0;
    std::vector<std::string> keys;
    std::unordered_map<std::string, Value> kv;
    std::vector<TensorEntry> tensors;
    std::unordered_map<std::string, size_t> index;

    // A read's pages given back (io/mapped_file.h; nothing for a from_bytes image).
    void release(const uint8_t* p, size_t n) const { map.release(p, n); }

    void parse() {
        Cursor c{base, size, 0, name};
        const uint8_t* magic = c.take(4, "the magic");
        if (std::memcmp(magic, "GGUF", 4) != 0) c.bad("the file does not start with \"GGUF\"");
        version = c.get<uint32_t>("the version");
        if (version != 2 && version != 3)
            c.bad(cat("version ", version, " (this reader reads GGUF versions 2 and 3)"));
        const uint64_t n_tensors = c.get<uint64_t>("the tensor count");
        const uint64_t n_kv = c.get<uint64_t>("the key/value count");
        // A key/value takes at least 13 bytes (an empty key, a type, one byte), a tensor 28.
        if (n_kv > c.left() / 13) c.bad(cat(n_kv, " key/value pairs cannot fit the file"));
        uint64_t items_left = kMaxArrayItems;
        for (uint64_t i = 0; i < n_kv; i++) {
            std::string key = c.str("a key");
            if (key.empty()) c.bad("an empty key");
            const uint32_t type = c.get<uint32_t>("a value type");
            Value v = read_value(c, type, key, items_left);
            if (!kv.emplace(key, std::move(v)).second) c.bad(cat("key '", key, "' appears twice"));
            keys.push_back(std::move(key));
        }
        uint64_t alignment = kAlignment;
        if (const Value* a = find("general.alignment")) {
            if (a->type != ValueType::U32 || a->u == 0 || (a->u & (a->u - 1)) != 0)
                c.bad("general.alignment must be a UINT32 power of two");
            alignment = a->u;
        }
        if (n_tensors > c.left() / 28) c.bad(cat(n_tensors, " tensors cannot fit the file"));
        tensors.reserve(static_cast<size_t>(n_tensors));
        for (uint64_t i = 0; i < n_tensors; i++) {
            TensorEntry t;
            t.name = c.str("a tensor name");
            if (t.name.empty() || t.name.size() > kMaxNameBytes)
                c.bad(cat("tensor name '", t.name.substr(0, 80), "' is ", t.name.size(),
                          " bytes (1 to ", kMaxNameBytes, ")"));
            const uint32_t dims = c.get<uint32_t>("a tensor's dimension count");
            if (dims < 1 || dims > kMaxDims)
                c.bad(cat("tensor '", t.name, "' has ", dims, " dimensions (1 to ", kMaxDims, ")"));
            uint64_t numel = 1;
            for (uint32_t d = 0; d < dims; d++) {
                const uint64_t n = c.get<uint64_t>("a tensor dimension");
                // At most 2^56 elements (8 bytes each at most): no byte count below overflows.
                if (n == 0 || n > (uint64_t{1} << 56) / numel)
                    c.bad(cat("tensor '", t.name, "' has a dimension of ", n));
                numel *= n;
                t.ne.push_back(n);
            }
            t.type = c.get<uint32_t>("a tensor type");
            t.offset = c.get<uint64_t>("a tensor offset");
            const TypeInfo* ti = type_info(t.type);
            if (!ti)
                c.bad(cat("tensor '", t.name, "' has ggml type ", t.type, ", which no ggml has"));
            if (ti->block > 0) {
                if (t.ne[0] % ti->block != 0)
                    c.bad(cat("tensor '", t.name, "': rows of ", t.ne[0],
                              " elements are not whole ", ti->name, " blocks of ", ti->block));
                t.bytes = numel / ti->block * ti->bytes;
            }
            if (t.offset % alignment != 0)
                c.bad(cat("tensor '", t.name, "' at offset ", t.offset, ", not a multiple of ",
                          alignment));
            if (!index.emplace(t.name, tensors.size()).second)
                c.bad(cat("tensor '", t.name, "' appears twice"));
            tensors.push_back(std::move(t));
        }
        data_start = (c.at + alignment - 1) / alignment * alignment;
        const uint64_t data_len = data_start <= size ? size - data_start : 0;
        for (const TensorEntry& t : tensors)
            if (t.offset > data_len || t.bytes > data_len - t.offset)
                c.bad(cat("tensor '", t.name, "' (", t.bytes, " bytes at ", t.offset,
                          ") runs past the file's ", data_len, " bytes of data"));
    }

    const Value* find(const std::string& key) const {
        const auto it = kv.find(key);
        return it == kv.end() ? nullptr : &it->second;
    }
};

Reader::Reader() : impl_(std::make_unique<Impl>()) {}
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;
Reader::~Reader() = default;

Reader Reader::open(const std::string& path) {
    Reader r;
    Impl& im = *r.impl_;
    im.name = path;
    im.map = MappedFile::open(path);
    if (im.map.size() < 24)
        fail(Status::Format, path, ": ", im.map.size(), " bytes, too short for a GGUF header (24)");
    im.base = im.map.data();
    im.size = im.map.size();
    im.parse();
    return r;
}

Reader Reader::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
    Reader r;
    r.impl_->name = name;
    r.impl_->bytes = std::move(bytes);
    r.impl_->base = r.impl_->bytes.data();
    r.impl_->size = r.impl_->bytes.size();
    r.impl_->parse();
    return r;
}

uint32_t Reader::version() const { return impl_->version; }
const std::string& Reader::source_name() const { return impl_->name; }
const std::vector<std::string>& Reader::keys() const { return impl_->keys; }
const Value* Reader::find(const std::string& key) const { return impl_->find(key); }
const std::vector<TensorEntry>& Reader::tensors() const { return impl_->tensors; }
const TensorEntry* Reader::find_tensor(const std::string& name) const {
    const auto it = impl_->index.find(name);
    return it == impl_->index.end() ? nullptr : &impl_->tensors[it->second];
}

int64_t Reader::integer(const std::string& key, int64_t fallback) const {
    const Value* v = find(key);
    if (!v) {
        if (fallback >= 0) return fallback;
        fail(Status::Format, impl_->name, ": key '", key, "' is missing");
    }
    switch (v->type) {
        case ValueType::U8:
        case ValueType::U16:
        case ValueType::U32:
        case ValueType::U64:
            if (v->u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return static_cast<int64_t>(v->u);
            break;
        case ValueType::I8:
        case ValueType::I16:
        case ValueType::I32:
        case ValueType::I64:
            return v->i;
        default:
            fail(Status::Format, impl_->name, ": key '", key, "' is a ", value_type_name(v->type),
                 ", expected an integer");
    }
    fail(Status::Format, impl_->name, ": key '", key, "' = ", v->u, " is out of range");
}

double Reader::number(const std::string& key, double fallback) const {
    const Value* v = find(key);
    if (!v) return fallback;
    if (v->type == ValueType::F32 || v->type == ValueType::F64) return v->f;
    if (v->type == ValueType::String || v->type == ValueType::Array || v->type == ValueType::Bool)
        fail(Status::Format, impl_->name, ": key '", key, "' is a ", value_type_name(v->type),
             ", expected a number");
    return static_cast<double>(integer(key));
}

std::string Reader::string(const std::string& key, const std::string& fallback) const {
    const Value* v = find(key);
    if (!v) return fallback;
    if (v->type != ValueType::String)
        fail(Status::Format, impl_->name, ": key '", key, "' is a ", value_type_name(v->type),
             ", expected a STRING");
    return v->s;
}

void Reader::read_rows(const TensorEntry& t, uint64_t row0, uint64_t n, float* out) const {
    const auto it = impl_->index.find(t.name);
    TRT_CHECK(it != impl_->index.end() && &impl_->tensors[it->second] == &t, "gguf: tensor '",
              t.name, "' is not from ", impl_->name);
    TRT_CHECK(row0 <= t.rows() && n <= t.rows() - row0, "gguf: rows ", row0, "+", n, " of '",
              t.name, "' (", t.rows(), " rows)");
    if (!decodable(t.type))
        fail(Status::Unsupported, impl_->name, ": tensor '", t.name, "' is ", type_id_name(t.type),
             "; model.init_from reads GGUF tensors of type F32, F16, BF16, Q8_0 and Q4_0 (convert "
             "the model again with llama.cpp's convert_hf_to_gguf.py --outtype f16/bf16/q8_0, or "
             "start from the Hugging Face folder)");
    const auto type = static_cast<TensorType>(t.type);
    const uint64_t row_bytes = encoded_bytes(type, t.ne[0]);
    const uint8_t* p = impl_->base + impl_->data_start + t.offset + row0 * row_bytes;
    decode(type, p, static_cast<size_t>(n * t.ne[0]), out);
    impl_->release(p, static_cast<size_t>(n * row_bytes));
}

}  // namespace trt::gguf

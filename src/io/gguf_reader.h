// A GGUF file read back (version 2 or 3; docs/FORMATS.md "GGUF" has the layout, gguf_writer.h
// the writing side): what model.init_from needs of a llama.cpp model file. Everything is
// validated before a byte of tensor data is trusted: counts against the bytes left, string
// and array lengths, value types, tensor dimensions (1..4, no overflow), element types,
// alignment, every tensor's bytes inside the file. A malformed file is Error(Format) naming
// the file and the fault; an element type this reader does not decode (the K-quants, IQ
// types) is Error(Unsupported) when the tensor is read, naming it.
//
// The file is mapped, not read: an 8B model's 16 GB are paged in as its rows are decoded and
// given back after each read (read_rows), so the resident memory holds what the caller copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/ggml_blocks.h"
#include "io/gguf_writer.h"

namespace trt::gguf {

// One metadata value. Arrays hold scalars or strings (an array of arrays is refused).
struct Value {
    ValueType type = ValueType::U8;
    uint64_t u = 0;                       // U8 U16 U32 U64 Bool
    int64_t i = 0;                        // I8 I16 I32 I64
    double f = 0;                         // F32 F64
    std::string s;                        // String
    ValueType item_type = ValueType::U8;  // Array
    std::vector<Value> items;             // Array
};

struct TensorEntry {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as stored (ne[0] = a row's elements)
    uint32_t type = 0;         // the ggml_type id as stored
    uint64_t offset = 0;       // in the data section
    uint64_t bytes = 0;        // its encoded size (0 for a type this reader cannot size)
    uint64_t numel() const;
    uint64_t rows() const;  // numel / ne[0]
    // PyTorch's order, outermost first ("[4096, 14336]" for ne {14336, 4096}).
    std::vector<int64_t> shape() const;
};

class Reader {
public:
    // Error(Io) when unreadable, Error(Format) for anything malformed.
    static Reader open(const std::string& path);
    // An in-memory image (tests, fuzzing); `name` is used in messages.
    static Reader from_bytes(std::vector<uint8_t> bytes, const std::string& name);

    Reader();
    Reader(Reader&&) noexcept;
    Reader& operator=(Reader&&) noexcept;
    ~Reader();

    uint32_t version() const;
    const std::string& source_name() const;
    const std::vector<std::string>& keys() const;  // in file order
    const Value* find(const std::string& key) const;
    const std::vector<TensorEntry>& tensors() const;
    const TensorEntry* find_tensor(const std::string& name) const;

    // Typed lookups for model.init_from: an integer key of any integer type that fits `int64`
    // (llama.cpp writes counts as UINT32, some converters as others), a number (F32/F64 or an
    // integer), a string. Absent: the fallback; absent without one, or present with another
    // type: Error(Format) naming the key.
    int64_t integer(const std::string& key, int64_t fallback = -1) const;
    double number(const std::string& key, double fallback) const;
    std::string string(const std::string& key, const std::string& fallback) const;

    // Rows [row0, row0 + n) of `t` (each ne[0] elements) decoded to fp32 into out[n * ne[0]].
    // F32, F16, BF16, Q8_0 and Q4_0; anything else is Error(Unsupported) naming the type.
    void read_rows(const TensorEntry& t, uint64_t row0, uint64_t n, float* out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ggml's name of a type id ("Q4_K" for 12), "type <id>" for an unknown one.
std::string type_id_name(uint32_t type);

// Whether `path` is a regular file whose first four bytes are "GGUF" (false when unreadable).
bool is_gguf_file(const std::string& path);

}  // namespace trt::gguf

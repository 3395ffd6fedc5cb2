// llm.c GPT-2 model checkpoints (gpt2_124M.bin, gpt2_124M_bf16.bin, ...), docs/FORMATS.md §3:
// read into a ParamTable host buffer so a run can start from weights llm.c trained or
// converted.
#pragma once
#include <cstdint>
#include <string>

#include "model/param_table.h"

namespace trt {

constexpr int32_t kLlmcModelMagic = 20240326;
constexpr int32_t kLlmcVersionF32 = 3;
constexpr int32_t kLlmcVersionBF16 = 5;
constexpr size_t kLlmcHeaderBytes = 256 * 4;

struct LlmcHeader {
    int32_t version = 0;  // 3: fp32 parameters, 5: bf16 parameters
    int32_t maxT = 0, V = 0, L = 0, NH = 0, C = 0;
    int32_t Vp = 0;       // padded vocab: rows of the stored wte (rows >= V are padding)
};

// True if the file's first int32 is the llm.c model magic (a cheap sniff; nothing else is
// validated). False for shorter or unreadable files.
bool is_llmc_checkpoint(const std::string& path);

// Reads and validates the header and the file size: magic, version 3 or 5, positive dims,
// Vp >= V, and size == 1024 + (number of stored values) * (4 or 2) bytes. Error(Format)
// naming the file and the fault; Error(Io) if unreadable.
LlmcHeader read_llmc_header(const std::string& path);

// Loads an llm.c checkpoint into host (table.total() floats, ParamTable order). Header dims
// that differ from the table are Error(Config) naming each model.* key with both values.
// Linear weights are transposed from llm.c's (out, in) to HF Conv1D (in, out); bf16 values
// widen to fp32 exactly; wte padding rows are dropped.
void load_llmc_gpt2(const ParamTable& table, const std::string& path, float* host);

}  // namespace trt

// prepare: byte-level tokenization of a text file into llm.c uint16 shards.
#pragma once
#include <cstdint>
#include <string>

namespace trt {

struct PrepareResult {
    int64_t train_tokens = 0;
    int64_t val_tokens = 0;
};

// Writes <out_dir>/train.bin (first 1 - val_fraction of the bytes) and <out_dir>/val.bin
// (the rest), magic 20240520 version 1, holding the folder's lock, and commits both with the
// folder's prepare.json as prepare_text does (data/shard_set.h): a complete-looking folder is
// always complete. val_fraction in [0, 1). Throws Error(InvalidArgument/Io/Busy).
PrepareResult prepare_bytes(const std::string& text_path, const std::string& out_dir,
                            double val_fraction);

// Writes one shard file atomically (tmp + fsync + rename). token_bytes = 2 (magic 20240520,
// version 1) or 4 (magic 20240801, version 7). Used by prepare and by tests.
void write_shard(const std::string& path, const uint32_t* tokens, int64_t n, int token_bytes);

}  // namespace trt

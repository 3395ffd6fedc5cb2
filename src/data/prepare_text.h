// prepare with a tokenizer: text files or JSON lines into llm.c shards (train.bin, val.bin, or
// numbered shards: data/shard_set.h) of a tokenizer's ids, on all cores.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trt {

struct PrepareTextOptions {
    std::string tokenizer;    // a tokenizer.json or tokenizer.model, or a model folder
    std::string jsonl_field;  // "": the inputs are text; else JSON lines, this field per line
    // The share of the input bytes, from the end, that goes to val.bin, in [0, 1).
    double val_fraction = 0.0;
    int threads = 0;  // 0: all cores
    // Called now and then from the calling thread: input bytes done, of total. Returning false
    // stops the run: Error(Cancelled), no shard written.
    std::function<bool(int64_t done, int64_t total)> progress;
    // Text files are read in blocks of read_block_bytes and encoded in pieces of about
    // piece_bytes (cut where the tokenizer cuts anyway), so memory does not grow with a file;
    // a tokenizer that cannot be cut (splits_at_line_starts() false) reads each file whole.
    // (Tests make both small.)
    size_t read_block_bytes = size_t(16) << 20;
    // 0: one train.bin and one val.bin (each at most 2^31 - 1 tokens, the format's limit);
    // N: train_000000.bin, train_000001.bin, ... (and val_...) of at most N tokens each.
    int64_t shard_tokens = 0;
    size_t piece_bytes = size_t(1) << 20;
    // JSON lines longer than this are refused (naming file:line) once this many bytes of one
    // are read, never read whole. (Tests make it small.)
    size_t max_json_line_bytes = size_t(256) << 20;
};

struct PrepareTextResult {
    int64_t documents = 0;     // each begins with the EOS token (llm.c's layout)
    int64_t train_tokens = 0;
    int64_t val_tokens = 0;
    int64_t bytes = 0;         // of text tokenized
    int32_t token_bytes = 2;   // 2 (uint16 shards) when every id fits, else 4
    int32_t vocab_size = 0;    // the tokenizer's (largest id + 1): model.vocab_size at least
    int32_t eos_id = 0;
    std::string eos_token;
    std::vector<std::string> train_files, val_files;  // the shards written, in order (names)
};

// Text inputs: each file is a document; the cut between train and val falls at the start of a
// line, which then begins a new document. JSON-line inputs: each line is an object whose
// string field `jsonl_field` is a document (other lines are an error naming file and line);
// whole documents go to val once their first byte lies past the cut. The EOS token is the
// tokenizer_config.json's eos_token beside the tokenizer, else the first known one the
// tokenizer has (<|endoftext|>, <|end_of_text|>, </s>). The run holds out_dir's lock (a second
// prepare into it fails with Error(Busy)); each shard is written to a temporary name, and all
// of them are renamed and recorded in out_dir/prepare.json as one set at the end
// (data/shard_set.h). Throws Error.
PrepareTextResult prepare_text(const std::vector<std::string>& inputs, const std::string& out_dir,
                               const PrepareTextOptions& options);

// The ids prepare_text writes for one text file holding `text`, in memory: the tokenizer's
// EOS token, then the text's ids (prepare cuts a file into pieces only where the ids do not
// change). tokenizer: as PrepareTextOptions::tokenizer. Not UTF-8 is Error(InvalidArgument)
// naming the byte.
std::vector<uint32_t> encode_text_document(const std::string& tokenizer, std::string_view text);

// The id prepare_text opens each document with for this tokenizer (a tokenizer file or model
// folder): tokenizer_config.json's eos_token, else the tokenizer's own end-of-text token.
// Error(Format) when it has none.
uint32_t document_separator_id(const std::string& tokenizer);

}  // namespace trt

// Trains a byte-level BPE tokenizer (the GPT-2 family: GPT-2's pre-tokenizer regex, the 256
// byte-level characters as the alphabet) on a user's text, and writes it as a Hugging Face
// tokenizer.json that Tokenizer::from_json and the Hugging Face libraries load alike.
//
// The classic algorithm (Sennrich et al.; what HF's BpeTrainer does): the text is cut into
// pieces by the pre-tokenizer and counted; every piece starts as its bytes; the most frequent
// adjacent pair of symbols (counted over all pieces, weighted by their counts) becomes a new
// token, and that repeats until the vocabulary is full or no pair occurs min_frequency times.
// Ties go to the pair whose merged token sorts first (bytewise), so a run is deterministic.
//
// Memory is that of the distinct pieces (not the text): add_text streams.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace trt::tok {

struct BpeTrainOptions {
    // The whole vocabulary: special tokens + 256 byte tokens + merges. At least 256 plus the
    // special tokens.
    uint32_t vocab_size = 0;
    // A pair seen fewer times than this (over the whole text) is never merged.
    uint64_t min_frequency = 2;
    // Added as special tokens with the first ids (GPT-2's document separator by default).
    std::vector<std::string> special_tokens = {"<|endoftext|>"};
};

struct TrainedBpe {
    std::vector<std::string> special_tokens;  // ids 0..n-1
    // ids n.. in order: the 256 byte tokens (as byte-level characters), then one per merge.
    std::vector<std::string> tokens;
    std::vector<std::pair<std::string, std::string>> merges;  // rank order, byte-level chars
    uint64_t pieces = 0;           // pre-tokenized pieces counted
    uint64_t distinct_pieces = 0;
};

class BpeTrainer {
public:
    // Throws Error(InvalidArgument) when the options cannot make a vocabulary.
    explicit BpeTrainer(BpeTrainOptions options);

    // Counts the pieces of text (valid UTF-8, else Error(InvalidArgument) naming `source` and
    // the byte offset). Special-token strings in the text are not learnt from.
    void add_text(std::string_view text, const std::string& source);
    // A text file of any size, streamed in chunks cut where no piece can span the cut (after a
    // newline followed by a printable ASCII character). Returns the bytes read; Error(Io)
    // naming the file when it cannot be read.
    uint64_t add_file(const std::string& path);
    // Tests: the chunk size of add_file (default 8 MiB; 0 restores it), to cut small files.
    static void set_file_chunk_bytes_for_tests(size_t bytes);

    TrainedBpe train() const;

private:
    BpeTrainOptions options_;
    std::unordered_map<std::string, uint64_t> piece_counts_;
    uint64_t pieces_ = 0;
};

// The tokenizer.json of a trained model: added_tokens (special), no normalizer, ByteLevel
// pre-tokenizer (GPT-2 regex, no prefix space) and decoder, model BPE with vocab and merges.
std::string to_tokenizer_json(const TrainedBpe& bpe);

}  // namespace trt::tok

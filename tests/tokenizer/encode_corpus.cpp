// encode_corpus TOKENIZER CORPUS.jsonl OUT.txt [DECODED.txt]: the C++ side of the tokenizer
// oracle tests (oracle_test.sh, sentencepiece_oracle_test.sh). TOKENIZER is a tokenizer.json
// or a SentencePiece model. Each corpus line is one JSON string (a document); each output line
// holds that document's ids separated by single spaces, the format of oracle/encode.mjs and
// of spm_encode --output_format=id. Without DECODED.txt, also checks decode(encode(doc)) ==
// doc; with it, writes decode(encode(doc)) there, a JSON string a line (for a normalizing
// tokenizer, whose round trip is the normalized text, not the identity). Prints documents, tokens, round-trip
// failures and the encode throughput (one thread) to stderr. Exit 3: the tokenizer is refused
// as unsupported.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        std::fprintf(stderr, "usage: encode_corpus TOKENIZER CORPUS.jsonl OUT.txt [DECODED.txt]\n");
        return 2;
    }
    try {
        const trt::tok::Tokenizer tok = trt::tok::Tokenizer::from_file(argv[1]);
        std::ifstream in(argv[2]);
        std::ofstream out(argv[3]);
        std::ofstream decoded;
        if (argc == 5) decoded.open(argv[4], std::ios::binary);
        if (!in || !out || (argc == 5 && !decoded)) {
            std::fprintf(stderr, "encode_corpus: cannot open %s or an output\n", argv[2]);
            return 1;
        }
        std::string line;
        size_t docs = 0, tokens = 0, bytes = 0, round_trip_failures = 0;
        double seconds = 0;
        while (std::getline(in, line)) {
            const trt::json::Value doc = trt::json::parse(line, argv[2]);
            if (!doc.is_string()) trt::fail(trt::Status::Format, argv[2], ": a line is not a string");
            const auto t0 = std::chrono::steady_clock::now();
            const std::vector<uint32_t> ids = tok.encode(doc.s);
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            for (size_t i = 0; i < ids.size(); i++) out << (i ? " " : "") << ids[i];
            out << '\n';
            const std::string back = tok.decode(ids);
            if (argc == 5)
                decoded << trt::json::quote(back) << '\n';
            else if (back != doc.s)
                round_trip_failures++;
            docs++;
            tokens += ids.size();
            bytes += doc.s.size();
        }
        std::fprintf(stderr,
                     "encode_corpus: %zu documents, %zu tokens, %zu bytes, %.2f MB/s (one "
                     "thread), %zu round-trip failures\n",
                     docs, tokens, bytes, bytes / 1e6 / (seconds > 0 ? seconds : 1e-9),
                     round_trip_failures);
        return round_trip_failures == 0 ? 0 : 1;
    } catch (const trt::Error& e) {
        std::fprintf(stderr, "encode_corpus: %s\n", e.what());
        return e.status() == trt::Status::Unsupported ? 3 : 1;  // 3: refused as unsupported
    }
}

// prepare with a tokenizer (prepare_text.h). The inputs are cut into work items (a JSON line's
// document; a ~1 MB piece of a text file, cut at a pre-tokenizer boundary (piece_boundary), so
// the pieces encode exactly as the whole would); a batch of items
// is encoded on all threads, then appended in input order to shards written by streaming.
#include "data/prepare_text.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/unicode_classes.h"

namespace trt {
namespace {

constexpr size_t kChunkBytes = size_t(1) << 20;        // a text item, about
constexpr size_t kMaxTextFileBytes = size_t(4) << 30;  // a text file is read whole
constexpr size_t kMaxJsonLineBytes = size_t(256) << 20;

// A shard written as it grows: header first (its count patched at the end), then the ids.
class ShardWriter {
public:
    ShardWriter(const std::string& path, int token_bytes)
        : path_(path), file_(path), token_bytes_(token_bytes) {
        const int32_t header[256] = {};
        file_.write(header, sizeof header);
    }
    void append(const std::vector<uint32_t>& ids) {
        if (count_ + static_cast<int64_t>(ids.size()) > std::numeric_limits<int32_t>::max())
            fail(Status::InvalidArgument, "prepare: '", path_, "' would hold more than 2^31 - 1 "
                 "tokens (one shard's limit); prepare the input in parts");
        if (token_bytes_ == 4) {
            file_.write(ids.data(), ids.size() * 4);
        } else {
            narrow_.assign(ids.begin(), ids.end());
            file_.write(narrow_.data(), narrow_.size() * 2);
        }
        count_ += static_cast<int64_t>(ids.size());
    }
    void append_one(uint32_t id) { append(std::vector<uint32_t>{id}); }
    int64_t count() const { return count_; }
    void commit() {
        int32_t header[3] = {token_bytes_ == 2 ? 20240520 : 20240801, token_bytes_ == 2 ? 1 : 7,
                             static_cast<int32_t>(count_)};
        file_.write_at(0, header, sizeof header);
        file_.commit();
    }

private:
    std::string path_;
    AtomicFile file_;
    int token_bytes_;
    int64_t count_ = 0;
    std::vector<uint16_t> narrow_;
};

struct Item {
    std::string text;           // the text, or a JSON line when `where` is set
    bool new_document = false;  // the EOS token goes first
    bool val = false;
    std::string where;          // "file:line" of a JSON line, parsed by the worker
    const std::string* field = nullptr;  // the JSON line's field holding the document
};

// The document an item holds: its text, or its JSON line's field (parsed on the worker).
std::string_view document_of(const Item& item, std::string& parsed) {
    if (item.where.empty()) return item.text;
    const json::Value v = json::parse(item.text, item.where);
    const json::Value* f = v.is_object() ? v.find(*item.field) : nullptr;
    if (!f || !f->is_string())
        fail(Status::InvalidArgument, "prepare: ", item.where, ": expected a JSON object with a "
             "string field \"", *item.field, "\"");
    parsed = f->s;
    return parsed;
}

// The EOS token: tokenizer_config.json's eos_token (a string, or an object with "content"),
// else the first known end-of-text token the tokenizer has.
std::pair<std::string, uint32_t> find_eos(const tok::Tokenizer& t, const std::string& config) {
    std::string name;
    if (!config.empty()) {
        const json::Value doc =
            json::parse_lenient_numbers(read_small_file(config, 16 << 20), config);
        const json::Value* eos = doc.is_object() ? doc.find("eos_token") : nullptr;
        if (eos && eos->is_string()) name = eos->s;
        if (eos && eos->is_object())
            if (const json::Value* c = eos->find("content"); c && c->is_string()) name = c->s;
    }
    uint32_t id = 0;
    if (!name.empty()) {
        if (!t.find(name, id))
            fail(Status::Format, "prepare: ", config, " names eos_token \"", name,
                 "\", which the tokenizer does not have");
        return {name, id};
    }
    for (const char* known : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
        if (t.find(known, id)) return {known, id};
    fail(Status::Format, "prepare: the tokenizer has no end-of-text token to separate documents "
         "(looked for tokenizer_config.json's eos_token, <|endoftext|>, <|end_of_text|>, </s>)");
}

uint64_t file_size(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        fail(Status::Io, "prepare: cannot read '", path, "': not a readable regular file");
    return static_cast<uint64_t>(st.st_size);
}

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Whether the pre-tokenizers (GPT-2's and cl100k's) always cut text between p - 1 and p, so
// that text[..p) and text[p..) encode to what the whole text does: a lone newline (printable
// ASCII before it, not a longer whitespace run, whose last character GPT-2 would give to the
// next piece) followed by a letter.
bool piece_boundary(const std::string& text, size_t p) {
    return p >= 2 && text[p - 1] == '\n' && ascii_letter(text[p]) && text[p - 2] > ' ' &&
           text[p - 2] <= '~';
}

// Encodes batches of items on `threads` threads: threads - 1 workers that live as long as the
// pool (so each keeps its tokenizer piece cache warm across batches) and the calling thread.
// Items are taken in turn; run() returns when the batch is done, rethrowing a worker's error.
class EncodePool {
public:
    EncodePool(const tok::Tokenizer& t, int threads) : t_(t) {
        for (int k = 1; k < threads; k++) workers_.emplace_back([this] { work_loop(); });
    }
    ~EncodePool() {
        {
            std::lock_guard<std::mutex> lock(m_);
            stop_ = true;
        }
        start_.notify_all();
        for (auto& w : workers_) w.join();
    }
    EncodePool(const EncodePool&) = delete;
    EncodePool& operator=(const EncodePool&) = delete;

    // ids[i] = the encoding of batch[i].text.
    void run(const std::vector<Item>& batch, std::vector<std::vector<uint32_t>>& ids) {
        ids.assign(batch.size(), {});
        {
            std::lock_guard<std::mutex> lock(m_);
            batch_ = &batch;
            ids_ = &ids;
            next_ = 0;
            busy_ = workers_.size();
            error_ = nullptr;
            generation_++;
        }
        start_.notify_all();
        take_items();
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [this] { return busy_ == 0; });
        batch_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void take_items() {
        for (size_t i; !failed_ && (i = next_.fetch_add(1)) < batch_->size();) {
            try {
                std::string parsed;
                (*ids_)[i] = t_.encode(document_of((*batch_)[i], parsed));
            } catch (...) {
                std::lock_guard<std::mutex> lock(m_);
                if (!error_) error_ = std::current_exception();
                failed_ = true;
            }
        }
    }
    void work_loop() {
        uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(m_);
                start_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
            }
            take_items();
            std::lock_guard<std::mutex> lock(m_);
            if (--busy_ == 0) done_.notify_one();
        }
    }

    const tok::Tokenizer& t_;
    std::vector<std::thread> workers_;
    std::mutex m_;
    std::condition_variable start_, done_;
    const std::vector<Item>* batch_ = nullptr;
    std::vector<std::vector<uint32_t>>* ids_ = nullptr;
    std::atomic<size_t> next_{0};
    std::atomic<bool> failed_{false};
    size_t busy_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
};

}  // namespace

PrepareTextResult prepare_text(const std::vector<std::string>& inputs, const std::string& out_dir,
                               const PrepareTextOptions& options) {
    if (inputs.empty()) fail(Status::InvalidArgument, "prepare: no input files");
    if (!(options.val_fraction >= 0.0 && options.val_fraction < 1.0))  // also rejects NaN
        fail(Status::InvalidArgument, "prepare: val_fraction must be in [0, 1), got ",
             options.val_fraction);
    const tok::TokenizerFiles files = tok::find_tokenizer_files(options.tokenizer, "prepare");
    const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(files.tokenizer_json);
    PrepareTextResult r;
    // (No structured binding: lambdas below capture eos, which C++17 does not allow for one.)
    const std::pair<std::string, uint32_t> eos_found = find_eos(tokenizer, files.tokenizer_config);
    const uint32_t eos = eos_found.second;
    r.eos_token = eos_found.first;
    r.eos_id = static_cast<int32_t>(eos);
    r.vocab_size = static_cast<int32_t>(tokenizer.id_limit());
    r.token_bytes = tokenizer.id_limit() <= 65536 ? 2 : 4;
    const int threads = options.threads > 0
                            ? options.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

    int64_t total = 0;
    for (const std::string& in : inputs) total += static_cast<int64_t>(file_size(in));
    // The first input byte that belongs to val (none when val_fraction is 0).
    const int64_t cut =
        options.val_fraction > 0.0
            ? total - static_cast<int64_t>(std::floor(static_cast<double>(total) * options.val_fraction))
            : std::numeric_limits<int64_t>::max();

    make_dirs(out_dir);
    const std::filesystem::path dir(out_dir);
    ShardWriter train((dir / "train.bin").string(), r.token_bytes);
    ShardWriter val((dir / "val.bin").string(), r.token_bytes);

    EncodePool pool(tokenizer, threads);
    std::vector<Item> batch;
    std::vector<std::vector<uint32_t>> batch_ids;
    size_t batch_bytes = 0;
    int64_t done = 0;
    const auto report = [&](int64_t bytes) {
        if (options.progress && !options.progress(bytes, total))
            fail(Status::Cancelled, "prepare: stopped by the progress callback after ", bytes,
                 " of ", total, " bytes; no shard was written");
    };
    // Encodes the batch, then appends its ids in input order.
    const auto flush = [&] {
        pool.run(batch, batch_ids);
        for (size_t i = 0; i < batch.size(); i++) {
            ShardWriter& w = batch[i].val ? val : train;
            if (batch[i].new_document) {
                w.append_one(eos);
                r.documents++;
            }
            w.append(batch_ids[i]);
        }
        batch.clear();
        batch_bytes = 0;
    };
    const auto add = [&](Item item) {
        batch_bytes += item.text.size();
        done += static_cast<int64_t>(item.text.size());
        batch.push_back(std::move(item));
        if (batch.size() >= static_cast<size_t>(threads) * 4 ||
            batch_bytes >= static_cast<size_t>(threads) * 2 * kChunkBytes) {
            flush();
            report(done);
        }
    };

    int64_t offset = 0;  // of the current input's first byte, over all inputs
    for (const std::string& in : inputs) {
        if (options.jsonl_field.empty()) {
            const std::string text = read_small_file(in, kMaxTextFileBytes);
            if (const size_t bad = tok::invalid_utf8_at(text); bad != std::string::npos)
                fail(Status::InvalidArgument, "prepare: '", in, "' is not valid UTF-8 (byte ",
                     bad, ")");
            // A text file is one document, cut into items at line starts that begin with a
            // letter (a pre-tokenizer boundary); the val cut starts a new document at the first
            // line start at or past it. A tokenizer that adds a prefix space encodes whole files.
            bool first = true;
            for (size_t pos = 0; pos < text.size();) {
                const bool in_val = offset + static_cast<int64_t>(pos) >= cut;
                size_t end = text.size();
                size_t forced = std::string::npos;  // the val cut inside this file, at a line start
                if (!in_val && cut < offset + static_cast<int64_t>(text.size())) {
                    const size_t c = static_cast<size_t>(cut - offset);
                    for (forced = c; forced < text.size() && forced > 0 && text[forced - 1] != '\n';)
                        forced++;
                }
                if (!tokenizer.adds_prefix_space()) {
                    for (size_t p = pos + kChunkBytes; p < text.size(); p++)
                        if (piece_boundary(text, p)) {
                            end = p;
                            break;
                        }
                }
                bool starts_val_document = false;
                if (forced != std::string::npos && forced >= pos && forced <= end) {
                    end = forced;
                    starts_val_document = true;
                }
                if (end > pos) add(Item{text.substr(pos, end - pos), first, in_val, {}, nullptr});
                first = starts_val_document;  // the val part opens a document of its own
                pos = end;
            }
            offset += static_cast<int64_t>(text.size());
            continue;
        }
        std::ifstream f(in, std::ios::binary);
        if (!f) fail(Status::Io, "prepare: cannot open '", in, "'");
        std::string line;
        for (int64_t line_no = 1; std::getline(f, line); line_no++) {
            const int64_t line_offset = offset;
            offset += static_cast<int64_t>(line.size()) + 1;
            if (line.size() > kMaxJsonLineBytes)
                fail(Status::InvalidArgument, "prepare: ", in, ":", line_no, ": the line is longer "
                     "than ", kMaxJsonLineBytes, " bytes");
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
            // Parsed (and refused, naming file and line) on the encoding threads.
            add(Item{std::move(line), true, line_offset >= cut, in + ":" + std::to_string(line_no),
                     &options.jsonl_field});
        }
        if (f.bad()) fail(Status::Io, "prepare: cannot read '", in, "'");
    }
    if (!batch.empty()) flush();
    report(total);

    r.train_tokens = train.count();
    r.val_tokens = val.count();
    r.bytes = total;
    if (r.train_tokens == 0)
        fail(Status::InvalidArgument, "prepare: the training split would be empty; give more "
             "text or a smaller val_fraction");
    if (options.val_fraction > 0.0 && r.val_tokens == 0)
        fail(Status::InvalidArgument, "prepare: the validation split would be empty (val_fraction ",
             options.val_fraction, "); give more text or val_fraction 0");
    train.commit();
    val.commit();  // an empty val.bin too, so a stale one cannot linger
    return r;
}

}  // namespace trt

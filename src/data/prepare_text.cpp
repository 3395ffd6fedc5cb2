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
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/bounded_lines.h"
#include "data/shard_set.h"
#include "data/text_window.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_identity.h"
#include "tokenizer/unicode_classes.h"

namespace trt {
namespace {

// A text file that must be encoded whole (the tokenizer cannot be cut: SentencePiece, a
// prefix space) is read whole, up to this size.
constexpr size_t kMaxTextFileBytes = size_t(4) << 30;

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
// else the one the tokenizer file names (a SentencePiece model's), else the first known
// end-of-text token the tokenizer has.
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
    if (const std::string own = tok::default_end_of_text(t); !own.empty() && t.find(own, id))
        return {own, id};
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
bool piece_boundary(TextWindow& text, uint64_t p) {
    return p >= 2 && text.at(p - 1) == '\n' && ascii_letter(text.at(p)) && text.at(p - 2) > ' ' &&
           text.at(p - 2) <= '~';
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

// Items on their way to the shards: gathered into batches that encode on all threads, each
// batch then appended in input order (a new document's EOS token first). Reports progress
// after each batch.
class ItemSink {
public:
    ItemSink(const tok::Tokenizer& t, const PrepareTextOptions& options, int threads,
             int64_t total, uint32_t eos, ShardSet& train, ShardSet& val)
        : options_(options), threads_(threads), total_(total), eos_(eos), train_(train),
          val_(val), pool_(t, threads) {}

    void add(Item item) {
        batch_bytes_ += item.text.size();
        done_ += static_cast<int64_t>(item.text.size());
        batch_.push_back(std::move(item));
        if (batch_.size() >= static_cast<size_t>(threads_) * 4 ||
            batch_bytes_ >= static_cast<size_t>(threads_) * 2 * options_.piece_bytes) {
            flush();
            report(done_);
        }
    }
    // The last batch, and the final report.
    void finish() {
        if (!batch_.empty()) flush();
        report(total_);
    }
    int64_t documents() const { return documents_; }

private:
    void report(int64_t bytes) {
        if (options_.progress && !options_.progress(bytes, total_))
            fail(Status::Cancelled, "prepare: stopped by the progress callback after ", bytes,
                 " of ", total_, " bytes; no shard was written");
    }
    // Encodes the batch, then appends its ids in input order.
    void flush() {
        pool_.run(batch_, batch_ids_);
        for (size_t i = 0; i < batch_.size(); i++) {
            ShardSet& w = batch_[i].val ? val_ : train_;
            if (batch_[i].new_document) {
                w.append_one(eos_);
                documents_++;
            }
            w.append(batch_ids_[i]);
        }
        batch_.clear();
        batch_bytes_ = 0;
    }

    const PrepareTextOptions& options_;
    const int threads_;
    const int64_t total_;
    const uint32_t eos_;
    ShardSet& train_;
    ShardSet& val_;
    EncodePool pool_;
    std::vector<Item> batch_;
    std::vector<std::vector<uint32_t>> batch_ids_;
    size_t batch_bytes_ = 0;
    int64_t done_ = 0;  // input bytes added
    int64_t documents_ = 0;
};

// Where the item at `pos` ends: the first piece boundary piece_bytes or more past it, else the
// end of the text; the whole text where the tokenizer cannot be cut.
uint64_t piece_end(TextWindow& text, uint64_t pos, uint64_t size, bool cuttable,
                   size_t piece_bytes) {
    if (cuttable)
        for (uint64_t p = pos + piece_bytes; p < size; p++)
            if (piece_boundary(text, p)) return p;
    return size;
}

// A text file is one document, cut into items at line starts that begin with a letter (a
// pre-tokenizer boundary); the val cut starts a new document at the first line start at or
// past it. A tokenizer whose pieces would encode differently (one that adds a prefix space,
// SentencePiece) encodes whole files. Read as it is cut: only the current item is in memory.
// `offset` (the file's first byte over all inputs) is moved past the file; `cut`: the first
// input byte of val.
void add_text_file(const std::string& in, int64_t& offset, int64_t cut,
                   const tok::Tokenizer& tokenizer, const PrepareTextOptions& options,
                   ItemSink& sink) {
    const uint64_t size = file_size(in);
    const bool cuttable = tokenizer.splits_at_line_starts();
    if (!cuttable && size > kMaxTextFileBytes)
        fail(Status::InvalidArgument, "prepare: '", in, "' is ", size, " bytes; this "
             "tokenizer encodes a text file whole, so at most ", kMaxTextFileBytes,
             " (cut it into several files, or give JSON lines)");
    TextWindow text(in, size, options.read_block_bytes);
    const uint64_t cut_here = cut > offset ? static_cast<uint64_t>(cut - offset) : 0;
    bool first = true;
    for (uint64_t pos = 0; pos < size;) {
        const bool in_val = offset + static_cast<int64_t>(pos) >= cut;
        uint64_t end = piece_end(text, pos, size, cuttable, options.piece_bytes);
        // The val cut inside this item: at the first line start at or past it.
        bool starts_val_document = false;
        if (!in_val && cut_here < size && cut_here <= end) {
            uint64_t forced = cut_here;
            while (forced < size && forced > 0 && text.at(forced - 1) != '\n') forced++;
            if (forced <= end) {
                end = forced;
                starts_val_document = true;
            }
        }
        if (end > pos) {
            std::string piece = text.take(pos, end);
            if (const size_t bad = tok::invalid_utf8_at(piece); bad != std::string::npos)
                fail(Status::InvalidArgument, "prepare: '", in, "' is not valid UTF-8 "
                     "(byte ", pos + bad, ")");
            sink.add(Item{std::move(piece), first, in_val, {}, nullptr});
        }
        text.release_before(end);
        first = starts_val_document;  // the val part opens a document of its own
        pos = end;
    }
    offset += static_cast<int64_t>(size);
}

// A JSON lines file: each line a document, parsed (and refused, naming file and line) on the
// encoding threads. `offset` (the file's first byte over all inputs) is moved past each line.
void add_json_lines(const std::string& in, int64_t& offset, int64_t cut,
                    const PrepareTextOptions& options, ItemSink& sink) {
    std::ifstream f(in, std::ios::binary);
    if (!f) fail(Status::Io, "prepare: cannot open '", in, "'");
    std::string line;
    BoundedLines lines(f);
    bool too_long = false;
    for (int64_t line_no = 1; lines.next(line, options.max_json_line_bytes, &too_long);
         line_no++) {
        if (too_long)
            fail(Status::InvalidArgument, "prepare: ", in, ":", line_no, ": the line is longer "
                 "than ", options.max_json_line_bytes, " bytes, the most a JSON line may "
                 "hold (one document per line; split larger ones)");
        const int64_t line_offset = offset;
        offset += static_cast<int64_t>(line.size()) + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
        sink.add(Item{std::move(line), true, line_offset >= cut, in + ":" + std::to_string(line_no),
                      &options.jsonl_field});
    }
    if (f.bad()) fail(Status::Io, "prepare: cannot read '", in, "'");
}

// val_fraction 1 asks for an evaluation-only folder (an empty train.bin); below 1 an empty
// training split is a surprise.
void check_splits(const PrepareTextResult& r, double val_fraction) {
    if (r.train_tokens == 0 && val_fraction < 1.0)
        fail(Status::InvalidArgument, "prepare: the training split would be empty; give more "
             "text or a smaller val_fraction (1 makes an evaluation-only folder on purpose)");
    if (val_fraction > 0.0 && r.val_tokens == 0)
        fail(Status::InvalidArgument, "prepare: the validation split would be empty (val_fraction ",
             val_fraction, "); give more text or val_fraction 0");
}

}  // namespace

PrepareTextResult prepare_text(const std::vector<std::string>& inputs, const std::string& out_dir,
                               const PrepareTextOptions& options) {
    if (inputs.empty()) fail(Status::InvalidArgument, "prepare: no input files");
    if (!(options.val_fraction >= 0.0 && options.val_fraction <= 1.0))  // also rejects NaN
        fail(Status::InvalidArgument, "prepare: val_fraction must be in [0, 1], got ",
             options.val_fraction);
    const tok::TokenizerFiles files = tok::find_tokenizer_files(options.tokenizer, "prepare");
    const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(files.path);
    PrepareTextResult r;
    const auto [eos_token, eos] = find_eos(tokenizer, files.tokenizer_config);
    r.eos_token = eos_token;
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

    // The folder is ours until we return (a second prepare into it is refused at once).
    const std::unique_ptr<DirLock> lock = open_prepare_folder(out_dir);
    ShardSet train(out_dir, "train", r.token_bytes, options.shard_tokens);
    ShardSet val(out_dir, "val", r.token_bytes, options.shard_tokens);

    ItemSink sink(tokenizer, options, threads, total, eos, train, val);
    int64_t offset = 0;  // of the current input's first byte, over all inputs
    for (const std::string& in : inputs) {
        if (options.jsonl_field.empty())
            add_text_file(in, offset, cut, tokenizer, options, sink);
        else
            add_json_lines(in, offset, cut, options, sink);
    }
    sink.finish();

    r.documents = sink.documents();
    r.train_tokens = train.count();
    r.val_tokens = val.count();
    r.bytes = total;
    check_splits(r, options.val_fraction);
    // Both splits as one set; an empty val.bin too, so a stale one cannot linger.
    // The manifest names the tokenizer, so training can tell data of another one.
    commit_prepared(out_dir, {&train, &val}, tok::identity_of(tokenizer, options.tokenizer));
    r.train_files = train.names();
    r.val_files = val.names();
    return r;
}

std::vector<uint32_t> encode_text_document(const std::string& tokenizer, std::string_view text) {
    const tok::TokenizerFiles files = tok::find_tokenizer_files(tokenizer, "tokenizer");
    const tok::Tokenizer t = tok::Tokenizer::from_file(files.path);
    const uint32_t eos = find_eos(t, files.tokenizer_config).second;
    if (const size_t bad = tok::invalid_utf8_at(text); bad != std::string::npos)
        fail(Status::InvalidArgument, "the text is not valid UTF-8 (byte ", bad, ")");
    std::vector<uint32_t> ids{eos};
    const std::vector<uint32_t> body = t.encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

uint32_t document_separator_id(const std::string& tokenizer) {
    const tok::TokenizerFiles files = tok::find_tokenizer_files(tokenizer, "tokenizer");
    return find_eos(tok::Tokenizer::from_file(files.path), files.tokenizer_config).second;
}

}  // namespace trt

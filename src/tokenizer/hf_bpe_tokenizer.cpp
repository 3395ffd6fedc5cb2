// Loading a tokenizer.json (what each field may hold, and the refusal for anything else), and
// the encode / decode pipelines: added tokens cut out first, then pre-tokenizer + BPE on the
// text between them; decode maps byte-level characters back to bytes.
#include "tokenizer/hf_bpe_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <unordered_map>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer_identity.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

using json::Value;

// Field access with errors that name the file and the JSON path.
struct Reader {
    const std::string& source;

    [[noreturn]] void bad(const std::string& path, const std::string& what) const {
        fail(Status::Format, source, ": ", path, " ", what);
    }
    [[noreturn]] void unsupported(const std::string& path, const std::string& what) const {
        fail(Status::Unsupported, source, ": ", path, " ", what,
             " (this library reads byte-level BPE tokenizers without a normalizer, as GPT-2's "
             "and Llama 3's)");
    }
    const Value& object(const Value& v, const std::string& path) const {
        if (!v.is_object()) bad(path, std::string("must be an object, not ") + v.kind_name());
        return v;
    }
    const Value* member(const Value& obj, const char* key) const {
        const Value* v = obj.find(key);
        return v && v->kind != Value::Kind::Null ? v : nullptr;
    }
    std::string string(const Value& v, const std::string& path) const {
        if (!v.is_string()) bad(path, std::string("must be a string, not ") + v.kind_name());
        return v.s;
    }
    bool boolean(const Value& obj, const char* key, bool fallback, const std::string& path) const {
        const Value* v = member(obj, key);
        if (!v) return fallback;
        if (v->kind != Value::Kind::Bool) bad(path + "." + key, "must be true or false");
        return v->b;
    }
    uint32_t id(const Value& v, const std::string& path) const {
        int64_t i = -1;
        if (!v.get_i64(i) || i < 0 || i > std::numeric_limits<int32_t>::max())
            bad(path, "must be a token id (an integer from 0 to 2147483647)");
        return static_cast<uint32_t>(i);
    }
};

BpeModel::Merges read_merges(const Reader& r, const Value& list) {
    if (!list.is_array()) r.bad("model.merges", "must be an array");
    BpeModel::Merges merges;
    merges.reserve(list.arr.size());
    for (size_t k = 0; k < list.arr.size(); k++) {
        const Value& m = list.arr[k];
        const std::string path = "model.merges[" + std::to_string(k) + "]";
        if (m.is_string()) {  // "left right"
            const size_t space = m.s.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 >= m.s.size() ||
                m.s.find(' ', space + 1) != std::string::npos)
                r.bad(path, "must be two tokens separated by one space, not \"" + m.s + "\"");
            merges.emplace_back(m.s.substr(0, space), m.s.substr(space + 1));
        } else if (m.is_array() && m.arr.size() == 2) {  // ["left", "right"]
            merges.emplace_back(r.string(m.arr[0], path + "[0]"), r.string(m.arr[1], path + "[1]"));
        } else {
            r.bad(path, "must be a \"left right\" string or a [left, right] pair");
        }
    }
    return merges;
}

// pre_tokenizer: ByteLevel (its own GPT-2 regex), or Sequence[Split(regex), ByteLevel
// without regex]. Sets the rule and add_prefix_space.
void read_pre_tokenizer(const Reader& r, const Value* pre, SplitRule& rule, bool& prefix_space) {
    if (!pre) r.unsupported("pre_tokenizer", "is missing");
    r.object(*pre, "pre_tokenizer");
    const Value* type = r.member(*pre, "type");
    const std::string t = type ? r.string(*type, "pre_tokenizer.type") : "";
    if (t == "ByteLevel") {
        if (!r.boolean(*pre, "use_regex", true, "pre_tokenizer"))
            r.unsupported("pre_tokenizer", "ByteLevel without use_regex is not supported");
        rule = SplitRule::Gpt2;
        prefix_space = r.boolean(*pre, "add_prefix_space", false, "pre_tokenizer");
        return;
    }
    const Value* steps = t == "Sequence" ? r.member(*pre, "pretokenizers") : nullptr;
    if (!steps || !steps->is_array() || steps->arr.size() != 2)
        r.unsupported("pre_tokenizer", "of type \"" + t + "\" is not supported");
    const Value& split = r.object(steps->arr[0], "pre_tokenizer.pretokenizers[0]");
    const Value& byte_level = r.object(steps->arr[1], "pre_tokenizer.pretokenizers[1]");
    const Value* st = r.member(split, "type");
    const Value* bt = r.member(byte_level, "type");
    if (!st || !st->is_string() || st->s != "Split" || !bt || !bt->is_string() ||
        bt->s != "ByteLevel")
        r.unsupported("pre_tokenizer", "Sequence other than [Split, ByteLevel] is not supported");
    const Value* pattern = r.member(split, "pattern");
    const Value* regex = pattern && pattern->is_object() ? r.member(*pattern, "Regex") : nullptr;
    const std::string p = regex ? r.string(*regex, "pre_tokenizer.pretokenizers[0].pattern.Regex")
                                : "";
    const Value* behavior = r.member(split, "behavior");
    if (!regex || !split_rule_for(p, rule))
        r.unsupported("pre_tokenizer.pretokenizers[0].pattern",
                      "is not a regex this library implements: \"" + p + "\"");
    if (!behavior || !behavior->is_string() || behavior->s != "Isolated" ||
        r.boolean(split, "invert", false, "pre_tokenizer.pretokenizers[0]"))
        r.unsupported("pre_tokenizer.pretokenizers[0]", "must split with behavior Isolated");
    if (r.boolean(byte_level, "use_regex", true, "pre_tokenizer.pretokenizers[1]"))
        r.unsupported("pre_tokenizer.pretokenizers[1]",
                      "ByteLevel after a Split must have use_regex false");
    prefix_space = r.boolean(byte_level, "add_prefix_space", false, "pre_tokenizer.pretokenizers[1]");
}

// How far the ids may run past the number of entries (reserved ids nothing uses are fine).
constexpr uint64_t kMaxIdGap = 65536;

// Pieces repeat (" the", " of", "\n"): each thread keeps the ids of the pieces it has encoded,
// for the last tokenizer it used, so the tokenizer stays immutable and shareable across
// threads. Bounded: cleared when full.
constexpr size_t kPieceCacheEntries = 1 << 16;
constexpr size_t kPieceCacheMaxBytes = 64;  // longer pieces are rare: not worth a slot

struct PieceCache {
    uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<uint32_t>> ids;
};

PieceCache& piece_cache(uint64_t owner) {
    thread_local PieceCache cache;
    if (cache.owner != owner || cache.ids.size() >= kPieceCacheEntries) {
        cache.ids.clear();
        cache.owner = owner;
    }
    return cache;
}

uint64_t next_cache_key() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
}

}  // namespace

std::shared_ptr<const HfBpeTokenizer> HfBpeTokenizer::from_json(std::string_view text,
                                                                const std::string& source) {
    const Reader r{source};
    const Value doc = json::parse(text, source);
    r.object(doc, "the document");
    auto tk = std::make_shared<HfBpeTokenizer>();
    tk->cache_key_ = next_cache_key();

    // ---- model
    const Value* model_v = r.member(doc, "model");
    if (!model_v) r.bad("model", "is missing");
    const Value& model = r.object(*model_v, "model");
    const Value* type = r.member(model, "type");
    const std::string mtype = type ? r.string(*type, "model.type") : "BPE";  // old files omit it
    if (mtype != "BPE") r.unsupported("model.type", "\"" + mtype + "\" is not supported");
    if (r.boolean(model, "byte_fallback", false, "model"))
        r.unsupported("model.byte_fallback", "true is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
        if (const Value* v = r.member(model, key); v && !(v->is_string() && v->s.empty()))
            r.unsupported(std::string("model.") + key, "must be null");
    const Value* vocab_v = r.member(model, "vocab");
    if (!vocab_v) r.bad("model.vocab", "is missing");
    r.object(*vocab_v, "model.vocab");
    BpeModel::Vocab vocab;
    vocab.reserve(vocab_v->obj.size());
    uint32_t limit = 0;       // the largest id + 1
    std::string limit_path;   // where the largest id is
    for (const json::Member& m : vocab_v->obj) {
        const std::string path = "model.vocab[\"" + m.key + "\"]";
        const uint32_t id = r.id(m.value, path);
        if (!vocab.emplace(m.key, id).second)
            r.bad("model.vocab", "lists \"" + m.key + "\" twice");
        if (id + 1 > limit) {
            limit = id + 1;
            limit_path = path;
        }
    }
    const Value* merges_v = r.member(model, "merges");
    if (!merges_v) r.bad("model.merges", "is missing");
    const BpeModel::Merges merges = read_merges(r, *merges_v);

    // ---- added tokens
    if (const Value* added = r.member(doc, "added_tokens")) {
        if (!added->is_array()) r.bad("added_tokens", "must be an array");
        for (size_t k = 0; k < added->arr.size(); k++) {
            const std::string path = "added_tokens[" + std::to_string(k) + "]";
            const Value& a = r.object(added->arr[k], path);
            AddedToken t;
            const Value* id = r.member(a, "id");
            const Value* content = r.member(a, "content");
            if (!id || !content) r.bad(path, "needs an id and a content");
            t.id = r.id(*id, path + ".id");
            t.content = r.string(*content, path + ".content");
            if (t.content.empty()) r.bad(path + ".content", "is empty");
            t.special = r.boolean(a, "special", false, path);
            for (const char* flag : {"single_word", "lstrip", "rstrip"})
                if (r.boolean(a, flag, false, path))
                    r.unsupported(path + "." + flag, "true is not supported (\"" + t.content + "\")");
            if (t.id + 1 > limit) {
                limit = t.id + 1;
                limit_path = path + ".id";
            }
            tk->added_.push_back(std::move(t));
        }
    }

    // ---- normalizer, pre-tokenizer, decoder
    if (const Value* norm = r.member(doc, "normalizer")) {
        const Value* nt = norm->is_object() ? r.member(*norm, "type") : nullptr;
        const std::string type = nt && nt->is_string() ? nt->s : "?";
        if (type != "NFC")
            r.unsupported("normalizer", "\"" + type + "\" is not supported (only null or NFC)");
        tk->nfc_ = true;
        // Added tokens are cut out of the text before it is normalized: right for those that
        // match the text as written ("normalized": false), not for the others.
        if (const Value* added = r.member(doc, "added_tokens"))
            for (size_t k = 0; k < added->arr.size(); k++)
                if (r.boolean(added->arr[k], "normalized", false, "added_tokens"))
                    r.unsupported("added_tokens[" + std::to_string(k) + "].normalized",
                                  "true with a normalizer is not supported");
    }
    read_pre_tokenizer(r, r.member(doc, "pre_tokenizer"), tk->rule_, tk->add_prefix_space_);
    const Value* dec = r.member(doc, "decoder");
    const Value* dt = dec && dec->is_object() ? r.member(*dec, "type") : nullptr;
    if (!dt || !dt->is_string() || dt->s != "ByteLevel")
        r.unsupported("decoder", "must be ByteLevel");

    // ---- the id table: one text per id, so decode is unambiguous. It is indexed by id, so
    // ids must be about as dense as the entries: one added token with id 2^27 would make a
    // 4 GB table of a 4 KB file.
    const uint64_t entries = vocab.size() + tk->added_.size();
    const uint64_t max_limit = 2 * entries + kMaxIdGap;
    if (limit > max_limit)
        r.bad(limit_path, "is " + std::to_string(limit - 1) + ", far beyond the tokenizer's " +
                              std::to_string(entries) + " entries: ids must be below " +
                              std::to_string(max_limit) + " (twice the entries + " +
                              std::to_string(kMaxIdGap) + "), as tables are indexed by id; "
                              "check the id, or renumber the tokens densely");
    tk->token_of_id_.assign(limit, std::string());
    tk->id_is_added_.assign(limit, 0);
    std::vector<uint8_t> used(limit, 0);
    for (const auto& [token, id] : vocab) {
        if (used[id])
            r.bad("model.vocab", "gives id " + std::to_string(id) + " to both \"" +
                                     tk->token_of_id_[id] + "\" and \"" + token + "\"");
        used[id] = 1;
        tk->token_of_id_[id] = token;
    }
    for (size_t k = 0; k < tk->added_.size(); k++) {
        const AddedToken& t = tk->added_[k];
        // An added token may repeat a vocabulary entry (GPT-2's <|endoftext|>), not rename it.
        if (used[t.id] && (tk->id_is_added_[t.id] || tk->token_of_id_[t.id] != t.content))
            r.bad("added_tokens[" + std::to_string(k) + "]",
                  "gives id " + std::to_string(t.id) + " to \"" + t.content +
                      "\", which already stands for \"" + tk->token_of_id_[t.id] + "\"");
        used[t.id] = 1;
        tk->token_of_id_[t.id] = t.content;
        tk->id_is_added_[t.id] = 1;
    }
    std::vector<std::string> contents;
    contents.reserve(tk->added_.size());
    for (const AddedToken& t : tk->added_) contents.push_back(t.content);
    tk->added_matcher_ = AddedTokenMatcher(contents);
    tk->bpe_ = BpeModel(std::move(vocab), merges, r.boolean(model, "ignore_merges", false, "model"),
                       source);
    return tk;
}

// Everything encode and decode depend on, by id and in rank order; nothing of the file's
// layout (key order, merges as strings or pairs, whitespace) or of what this class ignores.
std::string HfBpeTokenizer::identity_content() const {
    IdentityContent c(kHfBpeKind);
    c.u32(nfc_ ? 1 : 0);
    // By name, not the enum's number, so reordering SplitRule keeps every digest.
    c.bytes(rule_ == SplitRule::Gpt2     ? "gpt2"
            : rule_ == SplitRule::Cl100k ? "cl100k"
                                         : "cl100k-single-digits");
    c.u32(add_prefix_space_ ? 1 : 0);
    c.u32(bpe_.ignore_merges() ? 1 : 0);
    // The id table: each id's token text (the byte-level characters a vocabulary entry is
    // written in, or an added token's content), "" for an id nothing uses.
    c.u32(static_cast<uint32_t>(token_of_id_.size()));
    for (size_t id = 0; id < token_of_id_.size(); id++) {
        c.bytes(token_of_id_[id]);
        c.u32(id_is_added_[id]);
    }
    // Added tokens in id order (the file's order does not change what they do), with their
    // special flag.
    std::vector<std::pair<uint32_t, bool>> added;
    for (const AddedToken& t : added_) added.emplace_back(t.id, t.special);
    std::sort(added.begin(), added.end());
    c.u32(static_cast<uint32_t>(added.size()));
    for (const auto& [id, special] : added) {
        c.u32(id);
        c.u32(special ? 1 : 0);
    }
    const std::vector<std::pair<uint32_t, uint32_t>> merges = bpe_.merges_in_order();
    c.u32(static_cast<uint32_t>(merges.size()));
    for (const auto& [left, right] : merges) {
        c.u32(left);
        c.u32(right);
    }
    return c.take();
}

bool HfBpeTokenizer::find(std::string_view token, uint32_t& id) const {
    for (const AddedToken& t : added_)
        if (t.content == token) {
            id = t.id;
            return true;
        }
    auto it = bpe_.vocab().find(std::string(token));
    if (it == bpe_.vocab().end()) return false;
    id = it->second;
    return true;
}

void HfBpeTokenizer::encode_plain(std::string_view text, std::vector<uint32_t>& out) const {
    if (text.empty()) return;
    std::string normalized;
    if (nfc_) {
        normalized = to_nfc(text);
        text = normalized;
    }
    std::string prefixed;
    if (add_prefix_space_ && text.front() != ' ') {
        prefixed = " " + std::string(text);
        text = prefixed;
    }
    std::vector<std::string_view> pieces;
    split(text, rule_, pieces);
    PieceCache& cache = piece_cache(cache_key_);
    for (std::string_view p : pieces) {
        if (p.size() > kPieceCacheMaxBytes) {
            bpe_.encode(p, out);
            continue;
        }
        std::string key(p);
        auto it = cache.ids.find(key);
        if (it == cache.ids.end()) {
            std::vector<uint32_t> ids;
            bpe_.encode(p, ids);
            it = cache.ids.emplace(std::move(key), std::move(ids)).first;
        }
        out.insert(out.end(), it->second.begin(), it->second.end());
    }
}

std::vector<uint32_t> HfBpeTokenizer::encode(std::string_view text) const {
    std::vector<uint32_t> out;
    size_t plain = 0;  // start of the text not yet encoded
    for (const AddedTokenMatcher::Match& m : added_matcher_.find_all(text)) {
        const AddedToken& hit = added_[m.token];
        encode_plain(text.substr(plain, m.start - plain), out);
        out.push_back(hit.id);
        plain = m.start + hit.content.size();
    }
    encode_plain(text.substr(plain), out);
    return out;
}

std::string HfBpeTokenizer::decode(const std::vector<uint32_t>& ids) const {
    std::string out;
    for (uint32_t id : ids) {
        const std::string& token = token_of_id_[id];
        std::string bytes;
        // Added tokens, and vocabulary entries outside the byte alphabet, are their text.
        if (id_is_added_[id] || !from_byte_chars(token, bytes)) bytes = token;
        out += bytes;
    }
    return out;
}

}  // namespace trt::tok

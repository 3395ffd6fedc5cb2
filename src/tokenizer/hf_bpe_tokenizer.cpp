// Loading a tokenizer.json (what each field may hold, and the refusal for anything else), and
// the encode / decode pipelines: added tokens cut out first, then normalizer, pre-tokenizer
// and BPE on the text between them; decode runs the decoder over the tokens' texts.
#include "tokenizer/hf_bpe_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <unordered_map>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/tokenizer_identity.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

using json::Value;

using Reader = JsonReader;

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

// The largest id seen + 1, and where in the file that id is (for the density error).
struct IdLimit {
    uint32_t limit = 0;
    std::string path;
    void see(uint32_t id, const std::string& where, const char* suffix = "") {
        if (id + 1 > limit) {
            limit = id + 1;
            path = where + suffix;
        }
    }
};

// The "model" section: a BPE model's vocabulary and merges, and the object itself (its flags
// are read once the pre-tokenizer is known).
struct ModelSection {
    const Value* model = nullptr;
    BpeModel::Vocab vocab;
    BpeModel::Merges merges;
};

ModelSection read_model(const Reader& r, const Value& doc, IdLimit& limit) {
    ModelSection out;
    const Value* model_v = r.member(doc, "model");
    if (!model_v) r.bad("model", "is missing");
    const Value& model = r.object(*model_v, "model");
    out.model = &model;
    const Value* type = r.member(model, "type");
    const std::string mtype = type ? r.string(*type, "model.type") : "BPE";  // old files omit it
    if (mtype != "BPE") r.unsupported("model.type", "\"" + mtype + "\" is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
        if (const Value* v = r.member(model, key); v && !(v->is_string() && v->s.empty()))
            r.unsupported(std::string("model.") + key, "must be null");
    const Value* vocab_v = r.member(model, "vocab");
    if (!vocab_v) r.bad("model.vocab", "is missing");
    r.object(*vocab_v, "model.vocab");
    out.vocab.reserve(vocab_v->obj.size());
    for (const json::Member& m : vocab_v->obj) {
        const std::string path = "model.vocab[\"" + m.key + "\"]";
        const uint32_t id = r.id(m.value, path);
        if (!out.vocab.emplace(m.key, id).second)
            r.bad("model.vocab", "lists \"" + m.key + "\" twice");
        limit.see(id, path);
    }
    const Value* merges_v = r.member(model, "merges");
    if (!merges_v) r.bad("model.merges", "is missing");
    out.merges = read_merges(r, *merges_v);
    return out;
}

// "added_tokens": the special tokens, matched in the text as written.
std::vector<AddedToken> read_added_tokens(const Reader& r, const Value& doc, IdLimit& limit) {
    std::vector<AddedToken> out;
    const Value* added = r.member(doc, "added_tokens");
    if (!added) return out;
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
        limit.see(t.id, path, ".id");
        out.push_back(std::move(t));
    }
    return out;
}

// Added tokens are cut out of the text before it is normalized: right for those that match
// the text as written ("normalized": false), not for the others.
void refuse_normalized_added_tokens(const Reader& r, const Value& doc) {
    if (const Value* added = r.member(doc, "added_tokens"))
        for (size_t k = 0; k < added->arr.size(); k++)
            if (r.boolean(added->arr[k], "normalized", false, "added_tokens"))
                r.unsupported("added_tokens[" + std::to_string(k) + "].normalized",
                              "true with a normalizer is not supported");
}

// A ByteLevel pre-tokenizer means BPE over the byte alphabet; without one, over characters
// (SentencePiece-style, with byte_fallback for the characters the vocabulary lacks).
BpeModel::Options read_bpe_options(const Reader& r, const Value& model, bool byte_level) {
    BpeModel::Options options;
    options.byte_level = byte_level;
    options.ignore_merges = r.boolean(model, "ignore_merges", false, "model");
    options.byte_fallback = r.boolean(model, "byte_fallback", false, "model");
    if (options.byte_level && options.byte_fallback)
        r.unsupported("model.byte_fallback", "true with a ByteLevel pre-tokenizer is not supported");
    if (!options.byte_level) {
        options.unk_token = r.string_or(model, "unk_token", "", "model");
        options.fuse_unk = r.boolean(model, "fuse_unk", false, "model");
    }
    return options;
}

// The id table: one text per id, so decode is unambiguous. It is indexed by id, so ids must be
// about as dense as the entries: one added token with id 2^27 would make a 4 GB table of a
// 4 KB file.
struct IdTable {
    std::vector<std::string> token_of_id;  // "" for ids nothing uses
    std::vector<uint8_t> id_is_added;
};

IdTable build_id_table(const Reader& r, const BpeModel::Vocab& vocab,
                       const std::vector<AddedToken>& added, const IdLimit& limit) {
    const uint64_t entries = vocab.size() + added.size();
    const uint64_t max_limit = 2 * entries + kMaxIdGap;
    if (limit.limit > max_limit)
        r.bad(limit.path, "is " + std::to_string(limit.limit - 1) + ", far beyond the tokenizer's " +
                              std::to_string(entries) + " entries: ids must be below " +
                              std::to_string(max_limit) + " (twice the entries + " +
                              std::to_string(kMaxIdGap) + "), as tables are indexed by id; "
                              "check the id, or renumber the tokens densely");
    IdTable t;
    t.token_of_id.assign(limit.limit, std::string());
    t.id_is_added.assign(limit.limit, 0);
    std::vector<uint8_t> used(limit.limit, 0);
    for (const auto& [token, id] : vocab) {
        if (used[id])
            r.bad("model.vocab", "gives id " + std::to_string(id) + " to both \"" +
                                     t.token_of_id[id] + "\" and \"" + token + "\"");
        used[id] = 1;
        t.token_of_id[id] = token;
    }
    for (size_t k = 0; k < added.size(); k++) {
        const AddedToken& a = added[k];
        // An added token may repeat a vocabulary entry (GPT-2's <|endoftext|>), not rename it.
        if (used[a.id] && (t.id_is_added[a.id] || t.token_of_id[a.id] != a.content))
            r.bad("added_tokens[" + std::to_string(k) + "]",
                  "gives id " + std::to_string(a.id) + " to \"" + a.content +
                      "\", which already stands for \"" + t.token_of_id[a.id] + "\"");
        used[a.id] = 1;
        t.token_of_id[a.id] = a.content;
        t.id_is_added[a.id] = 1;
    }
    return t;
}

}  // namespace

std::shared_ptr<const HfBpeTokenizer> HfBpeTokenizer::from_json(std::string_view text,
                                                                const std::string& source) {
    const Reader r{source};
    const Value doc = json::parse(text, source);
    r.object(doc, "the document");
    auto tk = std::make_shared<HfBpeTokenizer>();
    tk->cache_key_ = next_cache_key();

    IdLimit limit;
    ModelSection model = read_model(r, doc, limit);
    tk->added_ = read_added_tokens(r, doc, limit);

    tk->normalizer_ = Normalizer::from_json(r, r.member(doc, "normalizer"), "normalizer");
    if (!tk->normalizer_.empty()) refuse_normalized_added_tokens(r, doc);
    tk->pre_ = PreTokenizer::from_json(r, r.member(doc, "pre_tokenizer"), "pre_tokenizer");
    tk->fast_ = tk->pre_.fast_rule(tk->rule_, tk->add_prefix_space_);
    tk->decoder_ = Decoder::from_json(r, r.member(doc, "decoder"), "decoder");
    const BpeModel::Options options = read_bpe_options(r, *model.model, tk->pre_.byte_level());

    IdTable ids = build_id_table(r, model.vocab, tk->added_, limit);
    tk->token_of_id_ = std::move(ids.token_of_id);
    tk->id_is_added_ = std::move(ids.id_is_added);
    std::vector<std::string> contents;
    contents.reserve(tk->added_.size());
    for (const AddedToken& t : tk->added_) contents.push_back(t.content);
    tk->added_matcher_ = AddedTokenMatcher(contents);
    tk->bpe_ = BpeModel(std::move(model.vocab), model.merges, options, source);
    return tk;
}

VocabTable HfBpeTokenizer::vocab_table() const {
    VocabTable t;
    const BpeModel::Options& o = bpe_.options();
    t.model = o.byte_level ? VocabTable::Model::ByteLevelBpe : VocabTable::Model::CharacterBpe;
    t.tokens = token_of_id_;
    t.kinds.assign(token_of_id_.size(), TokenKind::Normal);
    for (size_t id = 0; id < token_of_id_.size(); id++)
        if (token_of_id_[id].empty()) t.kinds[id] = TokenKind::Unused;
    for (const AddedToken& a : added_)
        t.kinds[a.id] = a.special ? TokenKind::Control : TokenKind::UserDefined;
    for (const auto& [left, right] : bpe_.merges_in_order())
        t.merges.push_back(token_of_id_[left] + " " + token_of_id_[right]);
    if (fast_)
        t.split_rule = rule_ == SplitRule::Gpt2     ? "gpt2"
                       : rule_ == SplitRule::Cl100k ? "cl100k"
                                                    : "cl100k-single-digits";
    uint32_t unk = 0;
    if (!o.unk_token.empty() && find(o.unk_token, unk)) {
        t.unk = static_cast<int32_t>(unk);
        if (t.kinds[unk] == TokenKind::Normal) t.kinds[unk] = TokenKind::Unknown;
    }
    return t;
}

// Everything encode and decode depend on, by id and in rank order; nothing of the file's
// layout (key order, merges as strings or pairs, whitespace) or of what this class ignores.
std::string HfBpeTokenizer::identity_content() const {
    IdentityContent c(kHfBpeKind);
    // The byte-level layouts that came first are written as they always were (their digests
    // are in prepare.json files); any other pipeline is described in full at the end.
    const bool classic = fast_ && (normalizer_.empty() || normalizer_.is_nfc_only()) &&
                         decoder_.is_byte_level_only();
    c.u32(normalizer_.is_nfc_only() ? 1 : 0);
    // By name, not the enum's number, so reordering SplitRule keeps every digest.
    c.bytes(!classic                    ? "pipeline"
            : rule_ == SplitRule::Gpt2   ? "gpt2"
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
    if (!classic) {
        const BpeModel::Options& o = bpe_.options();
        c.bytes(normalizer_.describe());
        c.bytes(pre_.describe());
        c.bytes(decoder_.describe());
        c.u32((o.byte_level ? 1 : 0) | (o.byte_fallback ? 2 : 0) | (o.fuse_unk ? 4 : 0));
        c.bytes(o.unk_token);
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

void HfBpeTokenizer::encode_piece(std::string_view p, std::vector<uint32_t>& out) const {
    if (p.size() > kPieceCacheMaxBytes) {
        bpe_.encode(p, out);
        return;
    }
    PieceCache& cache = piece_cache(cache_key_);
    std::string key(p);
    auto it = cache.ids.find(key);
    if (it == cache.ids.end()) {
        std::vector<uint32_t> ids;
        bpe_.encode(p, ids);
        it = cache.ids.emplace(std::move(key), std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
}

void HfBpeTokenizer::encode_plain(std::string_view text, bool at_start,
                                  std::vector<uint32_t>& out) const {
    if (text.empty()) return;
    std::string normalized;
    if (!normalizer_.empty()) {
        normalized = normalizer_.apply(text);
        text = normalized;
        if (text.empty()) return;
    }
    if (!fast_) {
        std::vector<std::string> pieces;
        pre_.run(text, at_start, pieces);
        for (const std::string& p : pieces) encode_piece(p, out);
        return;
    }
    std::string prefixed;
    if (add_prefix_space_ && text.front() != ' ') {
        prefixed = " " + std::string(text);
        text = prefixed;
    }
    std::vector<std::string_view> pieces;
    split(text, rule_, pieces);
    for (std::string_view p : pieces) encode_piece(p, out);
}

std::vector<uint32_t> HfBpeTokenizer::encode(std::string_view text) const {
    std::vector<uint32_t> out;
    size_t plain = 0;  // start of the text not yet encoded
    for (const AddedTokenMatcher::Match& m : added_matcher_.find_all(text)) {
        const AddedToken& hit = added_[m.token];
        encode_plain(text.substr(plain, m.start - plain), plain == 0, out);
        out.push_back(hit.id);
        plain = m.start + hit.content.size();
    }
    encode_plain(text.substr(plain), plain == 0, out);
    return out;
}

std::string HfBpeTokenizer::decode(const std::vector<uint32_t>& ids) const {
    if (!decoder_.is_byte_level_only()) {
        std::vector<std::string> tokens;
        tokens.reserve(ids.size());
        for (uint32_t id : ids) tokens.push_back(token_of_id_[id]);
        if (decoder_.empty()) {  // as Hugging Face's: the tokens joined by spaces
            std::string out;
            for (size_t k = 0; k < tokens.size(); k++) out += (k ? " " : "") + tokens[k];
            return out;
        }
        return decoder_.decode(std::move(tokens));
    }
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

// PreTokenizer (pre_tokenizers.h): reading the steps, and running them as Hugging Face's
// tokenizers (Rust) do: each step maps every piece so far to its own pieces.
#include "tokenizer/pre_tokenizers.h"

#include <algorithm>

#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

using Range = std::pair<size_t, size_t>;

const char* behavior_name(SplitBehavior b) {
    switch (b) {
        case SplitBehavior::Removed: return "Removed";
        case SplitBehavior::Isolated: return "Isolated";
        case SplitBehavior::MergedWithPrevious: return "MergedWithPrevious";
        case SplitBehavior::MergedWithNext: return "MergedWithNext";
        case SplitBehavior::Contiguous: return "Contiguous";
    }
    return "?";
}

struct Piece {
    std::string text;
    bool at_start;  // begins the text given to encode
};

}  // namespace

void split_by_matches(std::string_view piece, const std::vector<Range>& matches,
                      SplitBehavior behavior, bool invert, std::vector<Range>& out) {
    // The piece as alternating (range, is delimiter) parts, as HF's Pattern::find_matches.
    std::vector<std::pair<Range, bool>> parts;
    size_t prev = 0;
    for (const Range& m : matches) {
        if (prev != m.first) parts.push_back({{prev, m.first}, invert});
        parts.push_back({m, !invert});
        prev = m.second;
    }
    if (prev != piece.size() || piece.empty()) parts.push_back({{prev, piece.size()}, invert});
    // Then (range, remove) by behaviour.
    std::vector<std::pair<Range, bool>> splits;
    bool previous = false;
    switch (behavior) {
        case SplitBehavior::Removed: splits = parts; break;
        case SplitBehavior::Isolated:
            for (const auto& [r, is] : parts) splits.push_back({r, false});
            break;
        case SplitBehavior::Contiguous:
            for (const auto& [r, is] : parts) {
                if (is == previous && !splits.empty()) splits.back().first.second = r.second;
                else splits.push_back({r, false});
                previous = is;
            }
            break;
        case SplitBehavior::MergedWithPrevious:
            for (const auto& [r, is] : parts) {
                if (is && !previous && !splits.empty()) splits.back().first.second = r.second;
                else splits.push_back({r, false});
                previous = is;
            }
            break;
        case SplitBehavior::MergedWithNext:
            for (size_t k = parts.size(); k-- > 0;) {
                const auto& [r, is] = parts[k];
                if (is && !previous && !splits.empty()) splits.back().first.first = r.first;
                else splits.push_back({r, false});
                previous = is;
            }
            std::reverse(splits.begin(), splits.end());
            break;
    }
    for (const auto& [r, remove] : splits)
        if (!remove && r.second > r.first) out.push_back(r);
}

PreTokenizer PreTokenizer::from_json(const JsonReader& r, const json::Value* v,
                                     const std::string& path) {
    PreTokenizer p;
    if (v) p.read(r, *v, path);
    return p;
}

void PreTokenizer::read(const JsonReader& r, const json::Value& v, const std::string& path) {
    const std::string type = r.type(v, path);
    Step s;
    if (type == "Sequence") {
        const json::Value* list = r.member(v, "pretokenizers");
        if (!list || !list->is_array()) r.bad(path + ".pretokenizers", "must be an array");
        for (size_t k = 0; k < list->arr.size(); k++)
            read(r, list->arr[k], path + ".pretokenizers[" + std::to_string(k) + "]");
        return;
    } else if (type == "ByteLevel") {
        s.kind = Step::Kind::ByteLevel;
        s.add_prefix_space = r.boolean(v, "add_prefix_space", false, path);
        s.use_regex = r.boolean(v, "use_regex", true, path);
    } else if (type == "Split") {
        s.kind = Step::Kind::Split;
        const json::Value* pattern = r.member(v, "pattern");
        const json::Value* regex = pattern && pattern->is_object() ? r.member(*pattern, "Regex")
                                                                   : nullptr;
        if (regex) {
            s.regex = r.string(*regex, path + ".pattern.Regex");
            s.has_rule = split_rule_for(s.regex, s.rule);
            if (!s.has_rule)
                s.engine = std::make_shared<const Regex>(s.regex, r.source + ": " + path +
                                                                      ".pattern.Regex");
        } else {
            s.literal = r.literal_pattern(v, path);
        }
        const std::string b = r.string_or(v, "behavior", "", path);
        bool known = false;
        for (SplitBehavior each : {SplitBehavior::Removed, SplitBehavior::Isolated,
                                   SplitBehavior::MergedWithPrevious,
                                   SplitBehavior::MergedWithNext, SplitBehavior::Contiguous})
            if (b == behavior_name(each)) s.behavior = each, known = true;
        if (!known)
            r.bad(path + ".behavior", "must be Removed, Isolated, MergedWithPrevious, "
                                      "MergedWithNext or Contiguous, not \"" + b + "\"");
        s.invert = r.boolean(v, "invert", false, path);
    } else if (type == "Digits") {
        s.kind = Step::Kind::Digits;
        s.individual_digits = r.boolean(v, "individual_digits", false, path);
    } else if (type == "Metaspace") {
        s.kind = Step::Kind::Metaspace;
        s.metaspace = Metaspace::from_json(r, v, path);
    } else {
        r.unsupported(path, "\"" + type + "\" is not supported (ByteLevel, Split, Digits, "
                            "Metaspace, or a Sequence of them)");
    }
    steps_.push_back(std::move(s));
}

bool PreTokenizer::byte_level() const {
    for (const Step& s : steps_)
        if (s.kind == Step::Kind::ByteLevel) return true;
    return false;
}

bool PreTokenizer::fast_rule(SplitRule& rule, bool& prefix_space) const {
    if (steps_.size() == 1 && steps_[0].kind == Step::Kind::ByteLevel && steps_[0].use_regex) {
        rule = SplitRule::Gpt2;
        prefix_space = steps_[0].add_prefix_space;
        return true;
    }
    if (steps_.size() == 2 && steps_[0].kind == Step::Kind::Split && steps_[0].has_rule &&
        steps_[0].behavior == SplitBehavior::Isolated && !steps_[0].invert &&
        steps_[1].kind == Step::Kind::ByteLevel && !steps_[1].use_regex &&
        !steps_[1].add_prefix_space) {
        rule = steps_[0].rule;
        prefix_space = false;
        return true;
    }
    return false;
}

void PreTokenizer::run(std::string_view text, bool at_start,
                       std::vector<std::string>& pieces) const {
    std::vector<Piece> cur{{std::string(text), at_start}}, next;
    std::vector<Range> matches, ranges;
    std::vector<std::string_view> views;
    std::vector<std::string> out;
    for (const Step& s : steps_) {
        next.clear();
        for (Piece& p : cur) {
            const auto cut = [&](const std::string& t, bool start) {
                for (const Range& r : ranges)
                    next.push_back({t.substr(r.first, r.second - r.first), start && r.first == 0});
            };
            ranges.clear();
            switch (s.kind) {
                case Step::Kind::ByteLevel:
                    if (s.add_prefix_space && (p.text.empty() || p.text[0] != ' '))
                        p.text.insert(0, " ");
                    if (!s.use_regex) {
                        next.push_back(std::move(p));
                        break;
                    }
                    views.clear();
                    split(p.text, SplitRule::Gpt2, views);
                    for (std::string_view v : views)
                        ranges.push_back({size_t(v.data() - p.text.data()),
                                          size_t(v.data() - p.text.data()) + v.size()});
                    cut(p.text, p.at_start);
                    break;
                case Step::Kind::Split:
                    matches.clear();
                    if (s.has_rule) {
                        views.clear();
                        split(p.text, s.rule, views);
                        for (std::string_view v : views)
                            matches.push_back({size_t(v.data() - p.text.data()),
                                               size_t(v.data() - p.text.data()) + v.size()});
                    } else if (s.engine) {
                        s.engine->find_all(p.text, matches);
                    } else {
                        for (size_t hit = p.text.find(s.literal); hit != std::string::npos;
                             hit = p.text.find(s.literal, hit + s.literal.size()))
                            matches.push_back({hit, hit + s.literal.size()});
                    }
                    split_by_matches(p.text, matches, s.behavior, s.invert, ranges);
                    cut(p.text, p.at_start);
                    break;
                case Step::Kind::Digits:
                    // As HF's: each numeric character (\p{N}) is a match; Isolated for
                    // individual digits, else Contiguous (runs of digits, runs of the rest).
                    matches.clear();
                    for (size_t i = 0; i < p.text.size();) {
                        const Decoded d = decode_utf8(p.text, i);
                        if (is_number(d.cp)) matches.push_back({i, i + d.len});
                        i += d.len;
                    }
                    split_by_matches(p.text, matches,
                                     s.individual_digits ? SplitBehavior::Isolated
                                                         : SplitBehavior::Contiguous,
                                     false, ranges);
                    cut(p.text, p.at_start);
                    break;
                case Step::Kind::Metaspace:
                    out.clear();
                    s.metaspace.pre_tokenize(p.text, p.at_start, out);
                    for (size_t k = 0; k < out.size(); k++)
                        next.push_back({std::move(out[k]), p.at_start && k == 0});
                    break;
            }
        }
        cur.swap(next);
    }
    for (Piece& p : cur)
        if (!p.text.empty()) pieces.push_back(std::move(p.text));
}

std::string PreTokenizer::describe() const {
    std::string d;
    for (const Step& s : steps_) {
        switch (s.kind) {
            case Step::Kind::ByteLevel:
                d += std::string("bytelevel:") + (s.add_prefix_space ? "prefix" : "-") + ":" +
                     (s.use_regex ? "regex" : "-");
                break;
            case Step::Kind::Split:
                d += "split:" + std::string(s.literal.empty() ? "regex:" : "string:") +
                     std::to_string((s.literal.empty() ? s.regex : s.literal).size()) + ":" +
                     (s.literal.empty() ? s.regex : s.literal) + ":" + behavior_name(s.behavior) +
                     (s.invert ? ":invert" : "");
                break;
            case Step::Kind::Digits:
                d += s.individual_digits ? "digits:individual" : "digits:runs";
                break;
            case Step::Kind::Metaspace: d += s.metaspace.describe(); break;
        }
        d += ";";
    }
    return d;
}

}  // namespace trt::tok

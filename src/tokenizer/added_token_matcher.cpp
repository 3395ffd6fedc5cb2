// AddedTokenMatcher (added_token_matcher.h).
#include "tokenizer/added_token_matcher.h"

#include <algorithm>
#include <unordered_map>

namespace trt::tok {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::string>& tokens) {
    // The trie of the reversed tokens (a map while it grows, then one sorted table).
    nodes_.emplace_back();
    std::unordered_map<uint64_t, int32_t> grow;
    const auto key = [](int32_t node, unsigned char byte) {
        return (static_cast<uint64_t>(node) << 8) | byte;
    };
    lengths_.reserve(tokens.size());
    for (size_t t = 0; t < tokens.size(); t++) {
        const std::string& text = tokens[t];
        lengths_.push_back(text.size());
        if (text.empty()) continue;  // matches nothing
        int32_t node = 0;
        for (size_t i = text.size(); i-- > 0;) {
            const auto [it, added] =
                grow.emplace(key(node, static_cast<unsigned char>(text[i])),
                             static_cast<int32_t>(nodes_.size()));
            if (added) nodes_.emplace_back();
            node = it->second;
        }
        if (nodes_[node].ends == kNone) nodes_[node].ends = static_cast<int32_t>(t);
    }
    edges_.assign(grow.begin(), grow.end());
    std::sort(edges_.begin(), edges_.end());

    // Fail links breadth first (a node's fail is shallower, so it is done before the node).
    root_next_.fill(0);
    std::vector<int32_t> queue;
    queue.reserve(nodes_.size());
    for (const auto& [k, v] : edges_) {
        if ((k >> 8) != 0) break;  // sorted: the root's edges come first
        root_next_[k & 0xFF] = v;
        nodes_[v].fail = 0;
        queue.push_back(v);
    }
    nodes_[0].longest = kNone;
    for (size_t q = 0; q < queue.size(); q++) {
        const int32_t u = queue[q];
        Node& n = nodes_[u];
        n.longest = n.ends != kNone ? n.ends : nodes_[n.fail].longest;
        auto it = std::lower_bound(edges_.begin(), edges_.end(),
                                   std::make_pair(key(u, 0), int32_t{-1}));
        for (; it != edges_.end() && static_cast<int32_t>(it->first >> 8) == u; ++it) {
            const int32_t v = it->second;
            nodes_[v].fail = step(n.fail, static_cast<unsigned char>(it->first & 0xFF));
            queue.push_back(v);
        }
    }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
    if (node == 0) return root_next_[byte] != 0 ? root_next_[byte] : kNone;
    const uint64_t k = (static_cast<uint64_t>(node) << 8) | byte;
    const auto it = std::lower_bound(edges_.begin(), edges_.end(), std::make_pair(k, int32_t{-1}));
    return it != edges_.end() && it->first == k ? it->second : kNone;
}

int32_t AddedTokenMatcher::step(int32_t node, unsigned char byte) const {
    for (;;) {
        const int32_t next = child(node, byte);
        if (next != kNone) return next;
        if (node == 0) return 0;
        node = nodes_[node].fail;
    }
}

std::vector<AddedTokenMatcher::Match> AddedTokenMatcher::find_all(std::string_view text) const {
    std::vector<Match> found;
    if (nodes_.size() <= 1) return found;
    // Backwards: at each position the longest token starting there, collected right to left.
    int32_t state = 0;
    for (size_t i = text.size(); i-- > 0;) {
        state = step(state, static_cast<unsigned char>(text[i]));
        const int32_t t = nodes_[state].longest;
        if (t != kNone) found.push_back(Match{i, static_cast<uint32_t>(t)});
    }
    // Forwards: the leftmost, then on after it.
    std::reverse(found.begin(), found.end());
    size_t kept = 0, free_from = 0;
    for (const Match& m : found) {
        if (m.start < free_from) continue;
        found[kept++] = m;  // kept <= the index read: nothing unread is overwritten
        free_from = m.start + lengths_[m.token];
    }
    found.resize(kept);
    return found;
}

}  // namespace trt::tok

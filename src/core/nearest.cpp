#include "core/nearest.h"

#include <algorithm>
#include <limits>

namespace trt {

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

// A word far longer than any name is nowhere near one, and its quadratic edit distances
// would take seconds for a megabyte-long key: no suggestion.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
    constexpr size_t kLongestWorthComparing = 128;  // key paths, tensor names: far shorter
    if (word.size() > kLongestWorthComparing) return {};
    std::string best;
    size_t best_d = std::numeric_limits<size_t>::max();
    const size_t limit = std::max<size_t>(1, std::min<size_t>(3, (word.size() + 1) / 3));
    for (const std::string& c : candidates) {
        const size_t d = edit_distance(word, c);
        if (d <= limit && d < best_d) {
            best = c;
            best_d = d;
        }
    }
    return best;
}

}  // namespace trt

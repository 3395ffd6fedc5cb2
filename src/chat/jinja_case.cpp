#include "chat/jinja_case.h"

#include <cstdint>
#include <vector>

#include "chat/jinja_value.h"
#include "core/utf8.h"

namespace trt::chat {

namespace {

std::vector<uint32_t> decode(std::string_view s) {
    std::vector<uint32_t> out;
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + n > s.size()) n = 1;
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(cp);
        i += n;
    }
    return out;
}

// Latin Extended-A: which of 0x100..0x17F pair as (upper even, lower odd) and which as
// (upper odd, lower even).
bool ext_a_even_upper(uint32_t cp) { return (cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177); }
bool ext_a_odd_upper(uint32_t cp) { return (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E); }

uint32_t lower_cp(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 0x20;
    if (cp < 0x80) return cp;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;
    if (ext_a_even_upper(cp)) return cp | 1;
    if (ext_a_odd_upper(cp)) return (cp & 1) ? cp + 1 : cp;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 0x20;
    if (cp == 0x386) return 0x3AC;
    if (cp >= 0x388 && cp <= 0x38A) return cp + 0x25;
    if (cp == 0x38C) return 0x3CC;
    if (cp == 0x38E || cp == 0x38F) return cp + 0x3F;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    return cp;
}

uint32_t upper_cp(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 0x20;
    if (cp < 0x80) return cp;
    if (cp == 0x131) return 'I';  // before the Latin Extended-A pairs it sits among
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 0x20;
    if (cp == 0xFF) return 0x178;
    if (cp == 0xB5) return 0x39C;
    if (ext_a_even_upper(cp & ~1u) && (cp & 1)) return cp & ~1u;
    if (ext_a_odd_upper(cp) && !(cp & 1)) return cp - 1;
    if (cp == 0x17F) return 'S';
    if (cp >= 0x3B1 && cp <= 0x3C9) return cp == 0x3C2 ? 0x3A3 : cp - 0x20;
    if (cp == 0x3AC) return 0x386;
    if (cp >= 0x3AD && cp <= 0x3AF) return cp - 0x25;
    if (cp == 0x3CC) return 0x38C;
    if (cp == 0x3CD || cp == 0x3CE) return cp - 0x3F;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 0x20;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 0x50;
    return cp;
}

bool is_cased(uint32_t cp) { return lower_cp(cp) != cp || upper_cp(cp) != cp || cp == 0xDF || cp == 0x138 || cp == 0x149; }

// Python's multi-character mappings for the characters above.
void append_upper(std::string& out, uint32_t cp) {
    if (cp == 0xDF) { out += "SS"; return; }
    if (cp == 0x149) { append_utf8(out, 0x2BC); out += 'N'; return; }
    if (cp == 0x390 || cp == 0x3B0) {  // ΐ, ΰ: the capital, then the two combining marks
        append_utf8(out, cp == 0x390 ? 0x399 : 0x3A5);
        append_utf8(out, 0x308);
        append_utf8(out, 0x301);
        return;
    }
    append_utf8(out, upper_cp(cp));
}

void append_lower(std::string& out, const std::vector<uint32_t>& cps, size_t k) {
    const uint32_t cp = cps[k];
    if (cp == 0x130) { out += 'i'; append_utf8(out, 0x307); return; }
    if (cp == 0x3A3) {
        // Final sigma: after a cased letter and not before one.
        const bool after = k > 0 && is_cased(cps[k - 1]);
        const bool before = k + 1 < cps.size() && is_cased(cps[k + 1]);
        append_utf8(out, after && !before ? 0x3C2 : 0x3C3);
        return;
    }
    append_utf8(out, lower_cp(cp));
}

void append_title(std::string& out, uint32_t cp) {
    if (cp == 0xDF) { out += "Ss"; return; }
    append_upper(out, cp);
}

}  // namespace

std::string py_upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (uint32_t cp : decode(s)) append_upper(out, cp);
    return out;
}

std::string py_lower(std::string_view s) {
    const auto cps = decode(s);
    std::string out;
    out.reserve(s.size());
    for (size_t k = 0; k < cps.size(); ++k) append_lower(out, cps, k);
    return out;
}

std::string py_title(std::string_view s) {
    const auto cps = decode(s);
    std::string out;
    bool prev_cased = false;
    for (size_t k = 0; k < cps.size(); ++k) {
        const bool cased = is_cased(cps[k]);
        if (cased && !prev_cased) append_title(out, cps[k]);
        else if (cased) append_lower(out, cps, k);
        else append_utf8(out, cps[k]);
        prev_cased = cased;
    }
    return out;
}

std::string py_capitalize(std::string_view s) {
    const auto cps = decode(s);
    std::string out;
    for (size_t k = 0; k < cps.size(); ++k) {
        if (k == 0) append_title(out, cps[k]);
        else append_lower(out, cps, k);
    }
    return out;
}

std::string jinja_title(std::string_view s) {
    // "".join(w[0].upper() + w[1:].lower() for w in re.split(r"([-\s({\[<]+)", s) if w)
    const auto cps = decode(s);
    std::string out;
    size_t k = 0;
    auto is_sep = [](uint32_t cp) {
        return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
    };
    while (k < cps.size()) {
        const size_t b = k;
        const bool sep = is_sep(cps[k]);
        while (k < cps.size() && is_sep(cps[k]) == sep) ++k;
        if (sep) {
            for (size_t j = b; j < k; ++j) append_utf8(out, cps[j]);
            continue;
        }
        append_upper(out, cps[b]);
        // w[1:].lower() sees only the word: final sigma looks within it.
        const std::vector<uint32_t> tail(cps.begin() + static_cast<std::ptrdiff_t>(b + 1),
                                         cps.begin() + static_cast<std::ptrdiff_t>(k));
        for (size_t j = 0; j < tail.size(); ++j) append_lower(out, tail, j);
    }
    return out;
}

bool py_islower(std::string_view s) {
    bool any = false;
    for (uint32_t cp : decode(s)) {
        if (!is_cased(cp)) continue;
        if (lower_cp(cp) != cp) return false;
        any = true;
    }
    return any;
}

bool py_isupper(std::string_view s) {
    bool any = false;
    for (uint32_t cp : decode(s)) {
        if (!is_cased(cp)) continue;
        if (upper_cp(cp) != cp || cp == 0xDF || cp == 0x149 || cp == 0x138) return false;
        any = true;
    }
    return any;
}

}  // namespace trt::chat

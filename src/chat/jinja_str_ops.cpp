#include "chat/jinja_str_ops.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "chat/jinja_args.h"
#include "chat/jinja_render.h"
#include "core/error.h"

namespace trt::chat {

std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
    if (count < 0) count = std::numeric_limits<int64_t>::max();
    std::string out;
    if (old.empty()) {
        const auto chars = utf8_chars(s);
        int64_t done = 0;
        for (const auto& c : chars) {
            if (done < count) { out += rep; ++done; }
            out += c;
        }
        if (done < count) out += rep;
        return out;
    }
    size_t b = 0;
    int64_t done = 0;
    while (done < count) {
        const size_t k = s.find(old, b);
        if (k == std::string::npos) break;
        out.append(s, b, k - b);
        out += rep;
        b = k + old.size();
        ++done;
    }
    out.append(s, b, std::string::npos);
    return out;
}

List py_split(Evaluator& ev, const std::string& s, const Value* sep, int64_t maxsplit, int line) {
    List out;
    if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
    if (!sep || sep->is_none()) {
        // Runs of whitespace; no empty strings.
        const auto chars = utf8_chars(s);
        size_t k = 0;
        int64_t splits = 0;
        while (k < chars.size()) {
            auto space = [&](size_t i) {
                size_t p = 0;
                const std::string& c = chars[i];
                uint32_t cp = static_cast<unsigned char>(c[0]);
                if (c.size() > 1) {
                    cp = c.size() == 2 ? (cp & 0x1F) : c.size() == 3 ? (cp & 0x0F) : (cp & 0x07);
                    for (p = 1; p < c.size(); ++p) cp = (cp << 6) | (static_cast<unsigned char>(c[p]) & 0x3F);
                }
                return is_py_space(cp);
            };
            while (k < chars.size() && space(k)) ++k;
            if (k >= chars.size()) break;
            std::string word;
            if (splits >= maxsplit) {
                std::string rest;
                for (size_t i = k; i < chars.size(); ++i) rest += chars[i];
                out.push_back(Value::string(std::move(rest)));  // the rest keeps its trailing spaces
                break;
            }
            while (k < chars.size() && !space(k)) word += chars[k++];
            out.push_back(Value::string(std::move(word)));
            ++splits;
        }
        return out;
    }
    const std::string& d = need_string(ev, *sep, line, "split");
    if (d.empty()) ev.error(line, "empty separator");
    size_t b = 0;
    int64_t splits = 0;
    while (splits < maxsplit) {
        const size_t k = s.find(d, b);
        if (k == std::string::npos) break;
        out.push_back(Value::string(s.substr(b, k - b)));
        b = k + d.size();
        ++splits;
    }
    out.push_back(Value::string(s.substr(b)));
    return out;
}

std::vector<std::string> py_splitlines(const std::string& s) {
    std::vector<std::string> lines;
    std::string cur;
    size_t k = 0;
    auto flush = [&]() { lines.push_back(std::move(cur)); cur.clear(); };
    while (k < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        if (c == '\r') {
            flush();
            k += (k + 1 < s.size() && s[k + 1] == '\n') ? 2 : 1;
        } else if (c == '\n' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)) {
            flush();
            ++k;
        } else if (c == 0xC2 && k + 1 < s.size() && static_cast<unsigned char>(s[k + 1]) == 0x85) {
            flush();
            k += 2;
        } else if (c == 0xE2 && k + 2 < s.size() && static_cast<unsigned char>(s[k + 1]) == 0x80 &&
                   (static_cast<unsigned char>(s[k + 2]) == 0xA8 || static_cast<unsigned char>(s[k + 2]) == 0xA9)) {
            flush();
            k += 3;
        } else {
            cur += s[k++];
        }
    }
    if (!cur.empty()) lines.push_back(std::move(cur));
    return lines;
}

std::string percent_format(Evaluator& ev, const std::string& fmt, const Value& args, int line) {
    // Python's printf-style formatting: 'a %s b %d' % (x, y).
    List items;
    const bool mapping = args.is_dict() && !args.dict->is_namespace;
    if (args.is_list() && args.tuple) items = *args.list;
    else items.push_back(args);
    size_t next = 0;
    std::string out;
    auto take = [&]() -> const Value& {
        if (next >= items.size()) ev.error(line, "not enough arguments for format string");
        return items[next++];
    };
    for (size_t k = 0; k < fmt.size(); ++k) {
        if (fmt[k] != '%') { out += fmt[k]; continue; }
        if (++k >= fmt.size()) ev.error(line, "incomplete format");
        if (fmt[k] == '%') { out += '%'; continue; }
        if (fmt[k] == '(') ev.error(line, "%(name) formats are not supported by this runtime's template engine");
        std::string flags;
        while (k < fmt.size() && std::string("-+ #0").find(fmt[k]) != std::string::npos) flags += fmt[k++];
        std::string width, prec;
        while (k < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[k]))) width += fmt[k++];
        bool has_prec = false;
        if (k < fmt.size() && fmt[k] == '.') {
            has_prec = true;
            ++k;
            while (k < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[k]))) prec += fmt[k++];
        }
        if (k >= fmt.size()) ev.error(line, "incomplete format");
        if (width.size() > 4 || prec.size() > 4) ev.error(line, "a format width or precision over 9999");
        const char type = fmt[k];
        const Value& v = take();
        std::string piece;
        if (type == 's' || type == 'r' || type == 'a') {
            piece = type == 's' ? to_str(v) : repr(v);
            if (has_prec) {
                const auto chars = utf8_chars(piece);
                const size_t n = std::min(chars.size(), static_cast<size_t>(std::atoi(prec.c_str())));
                piece.clear();
                for (size_t c = 0; c < n; ++c) piece += chars[c];
            }
            const size_t w = static_cast<size_t>(std::atoi(width.c_str())), len = utf8_length(piece);
            if (len < w) {
                if (flags.find('-') != std::string::npos) piece += std::string(w - len, ' ');
                else piece = std::string(w - len, ' ') + piece;
            }
        } else if (std::string("diuxXofFeEgG").find(type) != std::string::npos) {
            if (!v.is_number())
                ev.error(line, cat("%", type, " format: a real number is required, not ", v.type_name()));
            std::string spec = "%" + flags + width + (has_prec ? "." + prec : std::string());
            char buf[10240];
            if (std::string("diuxXo").find(type) != std::string::npos) {
                const int64_t x = v.type == Value::Type::Float ? static_cast<int64_t>(v.f) : v.as_int();
                if (v.type == Value::Type::Float && (type == 'x' || type == 'X' || type == 'o'))
                    ev.error(line, cat("%", type, " format: an integer is required, not float"));
                spec += std::string("ll") + (type == 'i' || type == 'u' ? 'd' : type);
                std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(x));
            } else {
                spec += type;
                std::snprintf(buf, sizeof buf, spec.c_str(), v.as_double());
            }
            piece = buf;
        } else {
            ev.error(line, cat("unsupported format character '", type, "'"));
        }
        out += piece;
        ev.check_length(out.size(), line);
    }
    if (next < items.size() && !mapping)
        ev.error(line, "not all arguments converted during string formatting");
    ev.check_size(out.size(), line);
    return out;
}

}  // namespace trt::chat

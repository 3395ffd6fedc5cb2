// The globals a template may call: range, namespace, dict, raise_exception, strftime_now
// (jinja_builtins.h).
#include "chat/jinja_builtins.h"

#include <cmath>
#include <ctime>
#include <string>

#include "chat/jinja_args.h"
#include "chat/jinja_render.h"
#include "core/error.h"

namespace trt::chat {

Value global_function(const std::string& name) {
    if (name == "range")
        return Value::function("range", [](Evaluator& ev, CallArgs& a) {
            check_arity(ev, a, 3, "range");
            if (a.pos.empty()) ev.error(a.line, "range expected at least 1 argument, got 0");
            int64_t start = 0, stop, step = 1;
            if (a.pos.size() == 1) {
                stop = need_int(ev, a.pos[0], a.line, "range");
            } else {
                start = need_int(ev, a.pos[0], a.line, "range");
                stop = need_int(ev, a.pos[1], a.line, "range");
                if (a.pos.size() == 3) step = need_int(ev, a.pos[2], a.line, "range");
            }
            if (step == 0) ev.error(a.line, "range() arg 3 must not be zero");
            const double count = step > 0 ? std::ceil((static_cast<double>(stop) - start) / step)
                                          : std::ceil((static_cast<double>(start) - stop) / -static_cast<double>(step));
            // Jinja's sandbox refuses ranges over MAX_RANGE (100000) the same way.
            if (count > 100000)
                ev.error(a.line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
            ev.check_items(count > 0 ? static_cast<size_t>(count) : 0, a.line);
            List items;
            for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) items.push_back(Value::integer(v));
            return Value::make_list(std::move(items));
        });
    if (name == "namespace" || name == "dict")
        return Value::function(name, [name](Evaluator& ev, CallArgs& a) {
            Value d = Value::make_dict();
            d.dict->is_namespace = name == "namespace";
            if (d.dict->is_namespace) ev.track_namespace(d.dict);
            for (const Value& p : a.pos) {
                if (!p.is_dict() || p.dict->is_namespace)
                    ev.error(a.line, name + "() takes keyword arguments or one mapping");
                for (const auto& kv : p.dict->items) d.dict->set(kv.first, kv.second);
            }
            for (const auto& kv : a.kw) d.dict->set(kv.first, kv.second);
            return d;
        });
    if (name == "raise_exception")
        return Value::function(name, [](Evaluator& ev, CallArgs& a) -> Value {
            ev.error(a.line, a.pos.empty() ? std::string("raise_exception() called") : to_str(a.pos[0]));
        });
    if (name == "strftime_now")
        return Value::function(name, [](Evaluator& ev, CallArgs& a) {
            if (a.pos.empty()) ev.error(a.line, "strftime_now() needs a format");
            const std::string& fmt = need_string(ev, a.pos[0], a.line, "strftime_now");
            const std::time_t now = std::time(nullptr);
            std::tm tm{};
            localtime_r(&now, &tm);
            std::string buf(256 + fmt.size() * 8, '\0');
            const size_t n = std::strftime(&buf[0], buf.size(), fmt.c_str(), &tm);
            buf.resize(n);
            return Value::string(std::move(buf));
        });
    return Value::undefined();
}

}  // namespace trt::chat

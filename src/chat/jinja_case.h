// jinja_case: Python's str.upper/lower/title/capitalize on UTF-8 text, for the scripts chat
// text plausibly meets in a template's case filters: ASCII, Latin-1, Latin Extended-A, Greek
// (final sigma included) and Cyrillic. Other characters are left as they are
// (docs/CHAT_TEMPLATES.md says so).
#pragma once
#include <string>
#include <string_view>

namespace trt::chat {

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
// Jinja's |title filter: words start after -, whitespace, (, {, [ or <.
std::string jinja_title(std::string_view s);
// str.islower() / str.isupper(): some cased character, and all of them lower / upper.
bool py_islower(std::string_view s);
bool py_isupper(std::string_view s);

}  // namespace trt::chat

#!/usr/bin/env bash
# The house's size counts an outside review measures (issue 41): virtual methods of Backend,
# files over 1,000 lines in src/, and functions of 100 lines or more (by universal-ctags'
# start and end lines; lambdas count inside their enclosing function only).
#   bash scripts/code-counts.sh [--list]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ctags >/dev/null || { echo "code-counts: needs universal-ctags (apt-get install universal-ctags)" >&2; exit 2; }
list=${1:-}
# Virtual methods of class Backend (backend.h), the ops of backend_ops.def among them (the
# class generates a virtual method from each entry); other classes of the header not counted.
read -r virtuals mandatory ops < <(python3 - <<'PY'
import os, re
s = re.sub(r"//[^\n]*", "", open("src/backend/backend.h").read())
body = s[s.index("class Backend {"):]
body = body[:body.index("\n};")]
decls = re.findall(r"\bvirtual\b[^;{]*[;{]", body)
ops = 0
if os.path.exists("src/backend/backend_ops.def"):
    ops = len(re.findall(r"^TRT_OP(?:_COMPOSED)?\(", open("src/backend/backend_ops.def").read(), re.M))
    decls = [d for d in decls if "name params" not in d]  # the generating line itself
print(len(decls) + ops, sum(1 for d in decls if re.search(r"=\s*0\s*;$", d)), ops)
PY
)
big_files=$(find src -type f \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' \) -print0 |
    xargs -0 wc -l | awk '$2 != "total" && $1 > 1000 {print $1, $2}' | sort -rn)
long_functions=$(find src -type f \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' \) -print0 |
    xargs -0 ctags --language-force=C++ --output-format=json --fields=+ne --c++-kinds=f -o - 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    t = json.loads(line)
    if t.get("kind") != "function" or "end" not in t or t["name"].startswith("__anon"): continue
    n = t["end"] - t["line"] + 1
    if n >= 100: print(n, t["path"] + ":" + str(t["line"]), t.get("scope", "") + "::" + t["name"] if t.get("scope") else t["name"])
' | sort -rn)
echo "Backend virtual methods: $virtuals ($mandatory pure; $ops of them the ops of backend_ops.def)"
echo "files over 1,000 lines in src/: $(printf '%s' "$big_files" | grep -c . || true)"
[ "$list" = --list ] && printf '%s\n' "$big_files" | sed 's/^/  /'
echo "functions of 100 lines or more: $(printf '%s' "$long_functions" | grep -c . || true)"
[ "$list" = --list ] && printf '%s\n' "$long_functions" | sed 's/^/  /'
exit 0

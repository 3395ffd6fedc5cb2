"""An in-tree PEP 517 / PEP 660 build backend written with the standard library only.

The binding is pure Python (ctypes), so building it needs nothing from PyPI: this backend
zips the ``trainrt`` package into a ``py3-none-any`` wheel (METADATA, WHEEL, RECORD with
sha256 digests) and writes an sdist, reading the ``[project]`` table of pyproject.toml. It is
what ``pip install bindings/python`` runs (``[build-system] requires = []``), so installs work
offline, build isolation included.

Wheels and sdists are reproducible: entries are sorted and stamped with ``SOURCE_DATE_EPOCH``
(default 1980-01-01).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "build_wheel", "build_sdist", "build_editable", "get_requires_for_build_wheel",
    "get_requires_for_build_sdist", "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "trainrt"
# What an sdist holds besides the package (paths relative to ROOT).
SDIST_EXTRA = ["pyproject.toml", "README.md", "_build/trainrt_build.py", "tests", "test.sh"]


# ------------------------------------------------------------------ pyproject.toml
def _read_project() -> Dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python 3.11+
        return tomllib.loads(data.decode("utf-8"))["project"]
    except ImportError:
        return _mini_toml_project(data.decode("utf-8"))


def _mini_toml_project(text: str) -> Dict[str, Any]:
    """Enough TOML for this file's [project] table on Pythons without tomllib: string and
    array-of-string values, inline tables of strings, and [project.*] sub-tables of them."""
    project: Dict[str, Any] = {}
    table: Optional[Dict[str, Any]] = None
    lines = iter(text.splitlines())
    for line in lines:
        s = _strip_comment(line)
        if not s:
            continue
        m = re.match(r"^\[([A-Za-z0-9_.-]+)\]$", s)
        if m:
            name = m.group(1)
            if name == "project":
                table = project
            elif name.startswith("project."):
                table = project.setdefault(name[len("project."):], {})
            else:
                table = None
            continue
        if table is None or "=" not in s:
            continue
        key, value = (x.strip() for x in s.split("=", 1))
        while value.count("[") > value.count("]") or value.count("{") > value.count("}"):
            value += " " + _strip_comment(next(lines))
        table[key.strip('"')] = _mini_value(value)
    return project


def _strip_comment(line: str) -> str:
    """The line without a trailing # comment (a # inside a "string" is kept)."""
    quoted = escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            return line[:i].strip()
    return line.strip()


def _mini_value(v: str) -> Any:
    v = v.strip()
    if v.startswith('"'):
        return re.match(r'^"((?:[^"\\]|\\.)*)"', v).group(1).encode().decode("unicode_escape")
    if v.startswith("["):
        return [_mini_value(x) for x in re.findall(r'"(?:[^"\\]|\\.)*"', v)]
    if v.startswith("{"):
        return {k.strip().strip('"'): _mini_value(x)
                for k, x in re.findall(r'([A-Za-z0-9_"-]+)\s*=\s*("(?:[^"\\]|\\.)*")', v)}
    return v


def _dist_name(project: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project: Dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % project["name"],
        "Version: %s" % project["version"],
    ]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: %s" % lic["text"])
    elif isinstance(lic, str):
        lines.append("License: %s" % lic)
    for kw in [project.get("keywords")] if project.get("keywords") else []:
        lines.append("Keywords: %s" % ",".join(kw))
    for a in project.get("authors", []) or []:
        if isinstance(a, dict) and a.get("name"):
            lines.append("Author: %s" % a["name"])
    for c in project.get("classifiers", []) or []:
        lines.append("Classifier: %s" % c)
    for label, url in (project.get("urls") or {}).items():
        lines.append("Project-URL: %s, %s" % (label, url))
    for dep in project.get("dependencies", []) or []:
        lines.append("Requires-Dist: %s" % dep)
    for extra, deps in (project.get("optional-dependencies") or {}).items():
        lines.append("Provides-Extra: %s" % extra)
        for dep in deps:
            lines.append('Requires-Dist: %s; extra == "%s"' % (dep, extra))
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str):
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: %s" % (
            "text/markdown" if readme.endswith(".md") else "text/plain"))
    return "\n".join(lines) + "\n\n" + body


# ------------------------------------------------------------------ files
def _epoch() -> int:
    try:
        return max(315532800, int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))
    except ValueError:
        return 315532800


def _package_files() -> List[str]:
    """The package's files relative to ROOT, sorted (no caches, no compiled files)."""
    out = []
    for base, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                continue
            out.append(os.path.relpath(os.path.join(base, name), ROOT).replace(os.sep, "/"))
    return out


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode("ascii")


class _Wheel:
    def __init__(self, path: str) -> None:
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records: List[Tuple[str, str, int]] = []
        self.date = time.gmtime(_epoch())[:6]

    def add(self, arcname: str, data: bytes, mode: int = 0o644) -> None:
        info = zipfile.ZipInfo(arcname, date_time=self.date)
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.records.append((arcname, _digest(data), len(data)))

    def close(self, dist_info: str) -> None:
        record = "".join("%s,%s,%d\n" % r for r in self.records) + "%s/RECORD,,\n" % dist_info
        info = zipfile.ZipInfo("%s/RECORD" % dist_info, date_time=self.date)
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, record.encode("utf-8"))
        self.zip.close()


def _wheel_meta(generator_tag: str = "py3-none-any") -> str:
    return ("Wheel-Version: 1.0\nGenerator: trainrt_build (in-tree)\nRoot-Is-Purelib: true\n"
            "Tag: %s\n" % generator_tag)


def _write_dist_info(directory: str, project: Dict[str, Any]) -> str:
    name = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    d = os.path.join(directory, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(project))
    with open(os.path.join(d, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_meta())
    with open(os.path.join(d, "top_level.txt"), "w", encoding="utf-8") as f:
        f.write(PACKAGE + "\n")
    return name


def _build(wheel_directory: str, editable: bool) -> str:
    project = _read_project()
    dist = _dist_name(project)
    version = project["version"]
    dist_info = "%s-%s.dist-info" % (dist, version)
    filename = "%s-%s-py3-none-any.whl" % (dist, version)
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, filename)
    tmp = path + ".tmp"
    w = _Wheel(tmp)
    try:
        if editable:
            # PEP 660: a .pth file putting this source folder on sys.path.
            w.add("__editable__.%s-%s.pth" % (dist, version), (ROOT + "\n").encode("utf-8"))
        else:
            for rel in _package_files():
                with open(os.path.join(ROOT, rel), "rb") as f:
                    w.add(rel, f.read())
        w.add("%s/METADATA" % dist_info, _metadata(project).encode("utf-8"))
        w.add("%s/WHEEL" % dist_info, _wheel_meta().encode("utf-8"))
        w.add("%s/top_level.txt" % dist_info, (PACKAGE + "\n").encode("utf-8"))
        w.close(dist_info)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return filename


# ------------------------------------------------------------------ PEP 517 hooks
def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(
        config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    return _write_dist_info(metadata_directory, _read_project())


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Optional[Dict[str, Any]] = None) -> str:
    return _write_dist_info(metadata_directory, _read_project())


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = _read_project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    filename = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, filename)
    mtime = _epoch()

    files = list(_package_files())
    for extra in SDIST_EXTRA:
        full = os.path.join(ROOT, extra)
        if os.path.isdir(full):
            for b, dirs, names in os.walk(full):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for n in sorted(names):
                    if not n.endswith((".pyc", ".pyo")):
                        files.append(os.path.relpath(os.path.join(b, n), ROOT).replace(os.sep, "/"))
        elif os.path.exists(full):
            files.append(extra)

    def add(tar: tarfile.TarFile, arcname: str, data: bytes, mode: int) -> None:
        info = tarfile.TarInfo("%s/%s" % (base, arcname))
        info.size, info.mtime, info.mode = len(data), mtime, mode
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))

    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime, filename="") as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    add(tar, "PKG-INFO", _metadata(project).encode("utf-8"), 0o644)
                    for rel in sorted(set(files)):
                        full = os.path.join(ROOT, rel)
                        with open(full, "rb") as f:
                            data = f.read()
                        add(tar, rel, data, 0o755 if os.access(full, os.X_OK) else 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return filename

"""Import statements, read from source text with patterns (no parser needed for these).

Python, JavaScript/TypeScript and Go imports are resolved to repository files (related
material); the other languages' imports only feed framework detection.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from bot.context.paths import parts as path_parts

_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.MULTILINE)
_PY_FROM = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?[ \t]*([\w, \t]+)", re.MULTILINE
)
_JS_IMPORT = re.compile(
    r"""(?:\bimport\s+(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+[\w*{}\s,$]+\s+from\s+"""
    r"""|\brequire\s*\(\s*|\bimport\s*\(\s*)["']([^"'\n]+)["']"""
)
_GO_BLOCK = re.compile(r"^import\s*\(([^)]*)\)", re.MULTILINE)
_GO_SINGLE = re.compile(r'^import\s+(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)
_GO_PATH = re.compile(r'"([^"]+)"')
_GO_MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
_OTHER_IMPORT = {
    "java": re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+)", re.MULTILINE),
    "kotlin": re.compile(r"^\s*import\s+([\w.]+)", re.MULTILINE),
    "csharp": re.compile(r"^\s*using\s+(?:static\s+)?([\w.]+)\s*;", re.MULTILINE),
    "rust": re.compile(r"^\s*(?:pub\s+)?use\s+(\w+)|^\s*extern\s+crate\s+(\w+)", re.MULTILINE),
    "ruby": re.compile(r"""^\s*require(?:_relative)?\s+["']([^"']+)["']""", re.MULTILINE),
    "php": re.compile(r"^\s*use\s+([\w\\]+)", re.MULTILINE),
}
JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
JS_LANGUAGES = frozenset({"javascript", "typescript"})


def python_imports(text: str) -> list[str]:
    """Imported module names; `from a import b` yields `a.b` and `a` (either may be the
    module); relative imports keep their leading dots."""
    found: list[str] = []
    for match in _PY_IMPORT.finditer(text):
        found += [name.strip() for name in match.group(1).split(",") if name.strip()]
    for match in _PY_FROM.finditer(text):
        base = match.group(1)
        names = [n.strip() for n in match.group(2).replace("\t", " ").split(",")]
        sep = "" if base.endswith(".") else "."
        found += [f"{base}{sep}{n.split()[0]}" for n in names if n and n.split()[0] != "*"]
        found.append(base)
    return found


def js_imports(text: str) -> list[str]:
    return [m.group(1) for m in _JS_IMPORT.finditer(text)]


def go_imports(text: str) -> list[str]:
    found = [m.group(1) for m in _GO_SINGLE.finditer(text)]
    for block in _GO_BLOCK.finditer(text):
        found += _GO_PATH.findall(block.group(1))
    return found


def go_module(go_mod: str) -> str | None:
    match = _GO_MODULE.search(go_mod)
    return match.group(1) if match else None


def other_imports(text: str, language: str) -> list[str]:
    pattern = _OTHER_IMPORT.get(language)
    if pattern is None:
        return []
    return [next(g for g in m.groups() if g) for m in pattern.finditer(text)]


def imports_of(text: str, language: str | None) -> list[str]:
    """Every import the text names, as written (for framework detection)."""
    if language == "python":
        return python_imports(text)
    if language in JS_LANGUAGES:
        return js_imports(text)
    if language == "go":
        return go_imports(text)
    return other_imports(text, language or "")


# --- resolution to repository files -----------------------------------------------


def python_module_index(paths: list[str]) -> dict[str, str]:
    """Dotted module name -> path, also under the usual source roots (`src/`, `lib/`)."""
    index: dict[str, str] = {}
    for path in paths:
        if not path.endswith(".py"):
            continue
        parts = path_parts(path[:-3])
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts:
            continue
        index.setdefault(".".join(parts), path)
        if parts[0] in ("src", "lib", "python") and len(parts) > 1:
            index.setdefault(".".join(parts[1:]), path)
    return index


def resolve_python(name: str, importer: str, index: dict[str, str]) -> str | None:
    if name.startswith("."):
        dots = len(name) - len(name.lstrip("."))
        package = PurePosixPath(importer).parent.parts
        base = package[: len(package) - (dots - 1)] if dots - 1 <= len(package) else ()
        rest = name.lstrip(".")
        name = ".".join([*base, *([rest] if rest else [])])
        return index.get(name)
    return index.get(name)


def resolve_js(spec: str, importer: str, files: set[str]) -> str | None:
    if not spec.startswith("."):
        return None
    base = normalized_path(str(PurePosixPath(importer).parent / spec))
    if base is None:
        return None
    candidates = [base, *(base + e for e in JS_EXTENSIONS)]
    candidates += [f"{base}/index{e}" for e in JS_EXTENSIONS]
    # `./x.js` in TypeScript sources names `./x.ts`.
    stem, dot, _ = base.rpartition(".")
    if dot:
        candidates += [stem + e for e in JS_EXTENSIONS]
    return next((c for c in candidates if c in files), None)


def normalized_path(path: str) -> str | None:
    """`a/./b/../c` -> `a/c`; None when `..` climbs out of the repository."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def go_package_dir(import_path: str, module: str, module_dir: str) -> str | None:
    """The repository directory an import path names, if it is inside this module."""
    if import_path == module:
        return module_dir
    if not import_path.startswith(module + "/"):
        return None
    rest = import_path[len(module) + 1 :]
    return f"{module_dir}/{rest}" if module_dir else rest

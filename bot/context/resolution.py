"""Imports to repository files: what a binding (bot/context/bindings.py) names.

Python modules, JavaScript/TypeScript relative paths and Go packages go through
bot/context/imports.py's resolvers; a TypeScript or JavaScript path alias (`@/Hooks/useApi`)
through the `paths` of the nearest tsconfig.json or jsconfig.json. Java and Kotlin:
`import com.x.y.Foo` names a file whose path ends with `com/x/y/Foo.java` or `.kt`;
`import static com.x.y.Util.bar` names `bar` in `com/x/y/Util.java`; past those, a file of
the package `com.x.y` (a Kotlin file may hold any name) that the name index finds defining
the name (not for the platforms' own `java.`, `kotlin.`, `android.` packages). An import
that names nothing in the repository (the standard library, a dependency) resolves to None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.context.bindings import Binding
from bot.context.classify import is_test_path
from bot.context.imports import (
    go_module,
    go_package_dir,
    normalized_path,
    python_module_index,
    resolve_js,
    resolve_python,
)
from bot.context.paths import parent as path_parent
from bot.context.paths import stem as path_stem
from bot.context.symbols import family_of, grammar_of

JVM_SUFFIXES = (".java", ".kt", ".kts")
# Packages of the platforms: never in the repository.
_JVM_OUTSIDE = ("java.", "javax.", "jdk.", "sun.", "kotlin.", "kotlinx.", "android.", "androidx.")


@dataclass(frozen=True)
class GoModule:
    path: str  # the module path of go.mod
    directory: str  # where go.mod is ("" at the root)


@dataclass(frozen=True)
class JsAlias:
    """A `compilerOptions.paths` entry of a tsconfig.json or jsconfig.json: `@/*` ->
    `client/src/*` (repository paths), for the files under `directory`."""

    directory: str
    pattern: str
    targets: tuple[str, ...]

    def applies(self, importer: str) -> bool:
        return not self.directory or importer.startswith(self.directory + "/")

    def expand(self, spec: str) -> list[str]:
        head, star, tail = self.pattern.partition("*")
        if not star:
            return list(self.targets) if spec == self.pattern else []
        if not (spec.startswith(head) and spec.endswith(tail)) or len(spec) < len(head + tail):
            return []
        middle = spec[len(head) : len(spec) - len(tail)]
        return [t.replace("*", middle, 1) for t in self.targets]


@dataclass(frozen=True)
class Target:
    """Where a binding leads: the files of the module or package it names, and the name
    to find in them (None: the binding is the module or package itself). `package`: a
    JVM package whose files, found by the name index, may define `member`."""

    paths: tuple[str, ...]
    member: str | None
    package: str | None = None


JS_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json", "tsconfig.app.json", "tsconfig.base.json")
_JSON_NOISE = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def js_aliases(texts: Mapping[str, str]) -> list[JsAlias]:
    """The path aliases of tsconfig/jsconfig texts (path -> text; comments and trailing
    commas allowed, as TypeScript allows them), the most nested configuration first."""
    found = []
    for path, text in texts.items():
        cleaned = _TRAILING_COMMA.sub(r"\1", _JSON_NOISE.sub(lambda m: m.group(1) or "", text))
        try:
            options = json.loads(cleaned).get("compilerOptions") or {}
        except (ValueError, AttributeError):
            continue
        directory = path_parent(path)
        base = normalized_path(f"{directory}/{options.get('baseUrl') or '.'}") or ""
        for pattern, targets in (options.get("paths") or {}).items():
            if isinstance(pattern, str) and isinstance(targets, list):
                joined = (normalized_path(f"{base}/{t}") for t in targets if isinstance(t, str))
                found.append(JsAlias(directory, pattern, tuple(t for t in joined if t)))
    return sorted(found, key=lambda a: -len(a.directory))


def go_modules(texts: Mapping[str, str]) -> list[GoModule]:
    """The modules of go.mod texts (path -> text), the most nested first."""
    found = []
    for path, text in texts.items():
        module = go_module(text)
        if module:
            found.append(GoModule(module, path_parent(path)))
    return sorted(found, key=lambda m: -len(m.directory))


class Resolver:
    """Module and package names to the repository files that hold them."""

    def __init__(
        self,
        repo_files: Sequence[str],
        modules: Sequence[GoModule] = (),
        aliases: Sequence[JsAlias] = (),
    ) -> None:
        self._file_set = set(repo_files)
        self.aliases = list(aliases)
        self.python = python_module_index(list(repo_files))
        self.go = list(modules)
        self._dirs: dict[str, list[str]] = {}
        self._jvm: dict[str, list[str]] = {}
        for path in repo_files:
            if grammar_of(path) is not None:
                self._dirs.setdefault(path_parent(path), []).append(path)
            if path.endswith(JVM_SUFFIXES):
                self._jvm.setdefault(path_stem(path), []).append(path)

    def target(self, binding: Binding, importer: str) -> Target | None:
        family = family_of(importer)
        if family == "python":
            return self._python(binding, importer)
        if family == "js":
            path = self.js_path(binding.module, importer)
            if path is None:
                return None
            member = None if binding.wildcard else binding.member
            return Target((path,), member)
        if grammar_of(importer) == "go":
            directory = self.go_dir(binding.module)
            if directory is None:
                return None
            return Target(tuple(self.package_files(directory, importer)), None)
        if family == "jvm":
            return self._jvm_target(binding)
        return None

    # --- Python -------------------------------------------------------------------------

    def python_module(self, dotted: str, importer: str) -> str | None:
        return resolve_python(dotted, importer, self.python)

    def python_prefix(self, dotted: str, importer: str) -> tuple[str, list[str]] | None:
        """The longest leading part of `a.b.c.d` that is a module: (its file, the rest)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            path = self.python_module(".".join(parts[:cut]), importer)
            if path is not None:
                return path, parts[cut:]
        return None

    def _python(self, binding: Binding, importer: str) -> Target | None:
        if binding.member is None:
            module = binding.module
            if binding.local != module:  # `import a.b.c` binds `a`; `import a.b as x`, `a.b`
                module = module if binding.local not in module.split(".") else binding.local
            path = self.python_module(module, importer)
            return Target((path,), None) if path is not None else None
        base = binding.module
        sep = "" if base.endswith(".") else "."
        submodule = self.python_module(f"{base}{sep}{binding.member}", importer)
        if submodule is not None:
            return Target((submodule,), None)
        path = self.python_module(base, importer)
        return Target((path,), binding.member) if path is not None else None

    # --- JavaScript and TypeScript -----------------------------------------------------

    def js_path(self, spec: str, importer: str) -> str | None:
        """A relative import's file, or an aliased one's (`@/Hooks/useApi`)."""
        if spec.startswith("."):
            return resolve_js(spec, importer, self._file_set)
        for alias in self.aliases:
            if not alias.applies(importer):
                continue
            for base in alias.expand(spec):
                parent, _, name = base.rpartition("/")
                found = resolve_js(f"./{name}", f"{parent}/_" if parent else "_", self._file_set)
                if found is not None:
                    return found
        return None

    # --- Go -----------------------------------------------------------------------------

    def go_dir(self, import_path: str) -> str | None:
        for module in self.go:
            directory = go_package_dir(import_path, module.path, module.directory)
            if directory is not None:
                return directory
        return None

    def package_files(self, directory: str, importer: str) -> list[str]:
        """The code files of a directory in the importer's language family; Go test files
        only for a Go test."""
        family = family_of(importer)
        tests = is_test_path(importer)
        return [
            p
            for p in self._dirs.get(directory, [])
            if family_of(p) == family and (tests or not p.endswith("_test.go"))
        ]

    def same_package(self, path: str) -> list[str]:
        """The other files of the importer's package (Go, Java, Kotlin: its directory)."""
        return [p for p in self.package_files(path_parent(path), path) if p != path]

    # --- Java and Kotlin ----------------------------------------------------------------

    def _jvm_target(self, binding: Binding) -> Target | None:
        if binding.module.startswith(_JVM_OUTSIDE):
            return None
        if binding.wildcard:
            return Target((), None, package=binding.module)
        package_dir = binding.module.replace(".", "/")
        member = binding.member or ""
        found = self.jvm_file(f"{package_dir}/{member}")
        if found:
            return Target(found, member)
        found = self.jvm_file(package_dir)  # a static import: the module is a class
        if found:
            return Target(found, member)
        return Target((), member, package=binding.module)

    def jvm_file(self, stem_path: str) -> tuple[str, ...]:
        """Files whose path ends with `stem_path` + `.java`/`.kt`."""
        stem = stem_path.rsplit("/", 1)[-1]
        ends = tuple(f"/{stem_path}{s}" for s in JVM_SUFFIXES)
        exact = tuple(f"{stem_path}{s}" for s in JVM_SUFFIXES)
        return tuple(p for p in self._jvm.get(stem, []) if p.endswith(ends) or p in exact)


def distance(a: str, b: str) -> int:
    """Directory steps between two files."""
    pa, pb = a.split("/")[:-1], b.split("/")[:-1]
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    return len(pa) + len(pb) - 2 * common

"""A name the change uses -> its definition(s) in the repository.

In order: through the changed file's imports (bot/context/resolution.py), then the file
itself, then its package (Go, Java, Kotlin: the files of its directory, and Java/Kotlin
files declaring the same package), then the names `import *` brings, then the name index
of the head tree (bot/context/nameindex.py). A qualified name `q.name` goes through `q`: a
module or package (`models.User`, `pkg.Func`), a class (`CommonService.delete`,
`User.email`: the method, or for a field the class itself), `self`/`this` (the enclosing
class), a variable whose type the function states (`svc: Service`, `s := &Service{}`, a
Go receiver); when `q`'s type is unknown, a method of that name in a class the changed file
imports or uses counts when it is the only one, and past that the index.

A name defined in more than `ambiguous` places is not resolved ("ambiguous"), nor one
held by more files than the index looks through ("too common"); a name imported from
outside the repository, a builtin or a global is "outside".
"""

from __future__ import annotations

import builtins
import re
import sys
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Literal

from bot.context.bindings import Binding, bindings
from bot.context.classify import is_test_path
from bot.context.nameindex import NameIndex
from bot.context.resolution import Resolver, Target, distance
from bot.context.symbols import CLASS_KINDS, Definition, Parsed, innermost
from bot.context.uses import UsedName

MAX_TYPE_DEPTH = 8  # variables' stated types followed, at most, one through another
_TYPING: ContextVar[frozenset[tuple[str, str, int]]] = ContextVar("typing", default=frozenset())

Via = Literal["import", "same file", "package", "class", "index"]
Reason = Literal["ambiguous", "too common", "outside"]
AMBIGUOUS = 20
SELF_NAMES = frozenset({"self", "this", "cls", "super", "static", "$this"})
_OUTSIDE_BARE: dict[str, frozenset[str]] = {
    "python": frozenset(dir(builtins)),
    "js": frozenset(
        {"console", "Math", "JSON", "Object", "Array", "Promise", "Number", "String", "Date",
         "window", "document", "process", "Reflect", "Symbol", "Intl", "navigator", "Buffer",
         "localStorage", "sessionStorage", "React", "URL", "Error", "Boolean", "RegExp",
         "Map", "Set", "require", "setTimeout", "clearTimeout", "parseInt", "parseFloat",
         "fetch", "globalThis", "performance", "Record", "Partial", "Readonly", "Pick",
         "Omit", "Exclude", "Extract", "ReturnType", "Awaited", "Uint8Array", "TypeError",
         "describe", "it", "test", "expect", "jest", "beforeEach", "afterEach"}
    ),
    "go": frozenset(
        {"append", "cap", "close", "copy", "delete", "len", "make", "new", "panic", "print",
         "println", "recover", "error", "string", "int", "int64", "int32", "uint", "uint64",
         "byte", "rune", "bool", "float64", "float32", "any", "min", "max", "clear", "nil"}
    ),
    "jvm": frozenset(
        {"System", "Math", "String", "Integer", "Long", "Objects", "Arrays", "Collections",
         "List", "Map", "Set", "Optional", "Stream", "Collectors", "Thread", "Object",
         "Override", "Boolean", "Double", "Exception", "RuntimeException", "Int", "Unit",
         "Any", "listOf", "mapOf", "setOf", "println", "require", "check", "lazy",
         "mutableListOf", "mutableMapOf", "arrayOf", "Deprecated", "SuppressWarnings"}
    ),
}  # fmt: skip
_PY_OUTSIDE = frozenset(sys.stdlib_module_names)


@dataclass
class Source:
    """A changed file as the resolution reads it."""

    path: str
    parsed: Parsed
    defs: list[Definition]
    bindings: list[Binding]
    package: str | None
    known_classes: list[Definition] = field(default_factory=list)
    imports_read: bool = False  # the classes its imports name are among `known_classes`

    @property
    def family(self) -> str:
        return self.parsed.family

    def bound(self, name: str) -> Binding | None:
        found = [b for b in self.bindings if b.local == name and not b.wildcard]
        return found[-1] if found else None


@dataclass(frozen=True)
class Found:
    definitions: tuple[Definition, ...] = ()
    via: Via | None = None
    reason: Reason | None = None
    count: int = 0  # ambiguous: definitions; too common: files holding the name
    owner: Definition | None = None  # the class `q` of `q.name` when that led to it


OUTSIDE = Found(reason="outside")


class UseResolver:
    """Resolves the names of changed files against the tree (one analysis)."""

    def __init__(
        self,
        index: NameIndex,
        resolver: Resolver,
        sources: dict[str, Source],
        ambiguous: int = AMBIGUOUS,
    ) -> None:
        self.index, self.resolver, self.ambiguous = index, resolver, ambiguous
        self.sources = sources  # path -> Source, the changed files' to begin with
        self._targets: dict[tuple[str, Binding], Target | None] = {}

    async def resolve(self, src: Source, use: UsedName) -> Found:
        if use.qualifier is None:
            found = await self.bare(src, use.name, use.line)
        else:
            found = await self.qualified(src, use)
        self._learn(src, found)
        if found.definitions and all(d.path == src.path for d in found.definitions):
            return replace(found, via="same file")
        return found

    def _learn(self, src: Source, found: Found) -> None:
        """Classes a file uses are where an attribute of an unknown type is looked for."""
        for d in (*found.definitions, *([found.owner] if found.owner else [])):
            if d.kind in CLASS_KINDS and d not in src.known_classes:
                src.known_classes.append(d)

    # --- bare names ---------------------------------------------------------------------

    async def bare(self, src: Source, name: str, line: int) -> Found:
        binding = src.bound(name)
        if binding is not None:
            defs = await self.through(src, binding, name)
            return Found(defs, "import") if defs else OUTSIDE
        local = [d for d in src.defs if d.name == name and not d.contains(line)]
        if local:
            return Found(tuple(_prefer_types(local)), "same file")
        if name in _OUTSIDE_BARE.get(src.family, frozenset()):
            return OUTSIDE
        in_package = await self.in_package(src, name)
        if in_package:
            return Found(in_package, "package")
        for wildcard in (b for b in src.bindings if b.wildcard):
            defs = await self.through(src, wildcard, name)
            if defs:
                return Found(defs, "import")
        return await self.in_index(src, name)

    def target(self, src: Source, binding: Binding) -> Target | None:
        key = (src.path, binding)
        if key not in self._targets:
            self._targets[key] = self.resolver.target(binding, src.path)
        return self._targets[key]

    async def through(
        self, src: Source, binding: Binding, name: str, depth: int = 0
    ) -> tuple[Definition, ...]:
        """What `name`, bound by `binding`, is defined as: the imported member (re-exports
        followed twice), or for `import *` the name itself."""
        target = self.target(src, binding)
        if target is None:
            return ()
        member = name if binding.wildcard else target.member
        if member is None:
            return ()
        if target.package is not None:
            return await self.in_jvm_package(target.package, member)
        found = await self.defined_in(target.paths, member, top_level=True)
        if found or depth >= 2:
            return found
        for path in target.paths:  # `from .impl import Foo`, `export * from "./Box"`
            inner = await self.source(path)
            if inner is None or member == "default":
                continue
            again = inner.bound(member)
            onward = [again] if again is not None else [b for b in inner.bindings if b.wildcard]
            for binding in onward:
                found += await self.through(inner, binding, member, depth + 1)
                if found:
                    return found
        return found

    async def defined_in(
        self, paths: Sequence[str], name: str, *, top_level: bool = False
    ) -> tuple[Definition, ...]:
        found: list[Definition] = []
        for path in paths:
            facts = await self.index.facts(path)
            defs = facts.definitions or ()
            if name == "default":  # a JS default export
                found += _default_export(defs, await self.index.read(path) or b"")
                continue
            found += [d for d in defs if d.name == name and (d.parent is None or not top_level)]
        return tuple(_prefer_types(found))

    async def in_package(self, src: Source, name: str) -> tuple[Definition, ...]:
        if src.family not in ("go", "jvm"):
            return ()
        siblings = self.resolver.same_package(src.path)
        found = await self.index.lookup(name, within=siblings)
        defs = [d for d in found.definitions if d.parent is None]
        if not defs and src.family == "jvm" and src.package:
            defs = list(await self.in_jvm_package(src.package, name))
        return tuple(_prefer_types(defs))

    async def in_jvm_package(self, package: str, name: str) -> tuple[Definition, ...]:
        found = await self.index.lookup(name, family="jvm")
        out = []
        for d in found.definitions:
            if d.parent is None and (await self.index.facts(d.path)).package == package:
                out.append(d)
        return tuple(out)

    async def in_index(self, src: Source, name: str, *, members: bool = False) -> Found:
        """Definitions of `name` anywhere in the family's files: top-level ones for a bare
        name (the file's own were tried), methods for `x.name`."""
        found = await self.index.lookup(name, family=src.family, enough=self.ambiguous + 1)
        if found.too_common:
            return Found(reason="too common", count=found.files)
        if found.count > self.ambiguous:
            return Found(reason="ambiguous", count=found.count)
        defs = [d for d in found.definitions if (d.parent is not None) == members]
        if not members:
            defs = [d for d in defs if d.path != src.path]
        defs = _prefer_types(defs)
        if not defs:
            return OUTSIDE
        return Found(tuple(nearest(defs, src.path)), "index", count=len(defs))

    # --- qualified names ----------------------------------------------------------------

    async def qualified(self, src: Source, use: UsedName) -> Found:
        root = use.root
        if root is not None:
            found = await self.through_qualifier(src, use, root)
            if found is not None:
                return found
        return await self.unknown_type(src, use)

    async def through_qualifier(self, src: Source, use: UsedName, root: str) -> Found | None:
        """`q.name` or `q.field.name` where `q` says what it is: a module, a package, a
        class, `self`, a typed variable. None when it does not (an untyped variable)."""
        binding = src.bound(root)
        if binding is not None:
            target = self.target(src, binding)
            if target is None:
                return OUTSIDE
            if target.member is None and target.package is None:
                return await self.in_module(src, use, target)
        elif root in _outside_names(src.family):
            return OUTSIDE
        fields = segments(use.qualifier or "")[1:]
        if len(fields) > 1:
            return None
        owners = await self.type_of(src, root, use.line)
        if fields and owners:
            owners = await self.field_type(owners, fields[0])
        if not owners:
            return None
        found = await self.member_of(owners, use)
        if found.owner is None or found.definitions != (found.owner,):
            return found
        # A field (`Model.column`, `a.server`): the class, and the type the field holds.
        held = tuple(await self.field_type(owners, use.name)) if use.kind == "attribute" else ()
        if root in SELF_NAMES and not fields:  # not the class itself: it is being read
            return Found(held, "class", owner=found.owner) if held else OUTSIDE
        return replace(found, definitions=found.definitions + held)

    async def type_of(self, src: Source, root: str, line: int) -> list[Definition]:
        """What `root` stands for where `line` uses it: the enclosing class for `self`, an
        imported or known class, or the type the function states for it."""
        if root in SELF_NAMES:
            cls = _enclosing_class(src.defs, line)
            return [cls] if cls is not None else []
        binding = src.bound(root)
        if binding is not None:
            return list(await self.through(src, binding, root))
        if root[:1].isupper():
            found = await self.bare(src, root, line)
            if found.definitions:
                return list(found.definitions)
        typed = local_type(src.parsed.data, src.defs, root, line)
        if not typed:
            return []
        # A type stated through the variable itself (`c := c.Conn`, `x: x.T`) or a chain
        # that comes back to it: stop rather than follow it round (per task: a ContextVar).
        key = (src.path, root, line)
        seen = _TYPING.get()
        if key in seen or len(seen) >= MAX_TYPE_DEPTH:
            return []
        token = _TYPING.set(seen | {key})
        try:
            return await self.resolve_type(src, typed, line)
        finally:
            _TYPING.reset(token)

    async def resolve_type(self, src: Source, typed: str, line: int) -> list[Definition]:
        qualifier, _, name = typed.rpartition(".")
        if qualifier:
            found = await self.qualified(src, UsedName(name, qualifier, "type", line))
        else:
            found = await self.bare(src, name, line)
        return [d for d in found.definitions if d.kind in CLASS_KINDS]

    async def field_type(self, owners: Sequence[Definition], name: str) -> list[Definition]:
        """The class a field of one of `owners` holds, as the class states it (`repo *Repo`,
        `client: ApiClient`, `self.repo = Repo(...)`)."""
        for cls in (d for d in owners if d.kind in CLASS_KINDS):
            data = await self.index.read(cls.path)
            home = await self.source(cls.path)
            if data is None or home is None:
                continue
            text = b"\n".join(data.split(b"\n")[cls.start - 1 : cls.end])
            typed = stated_type(text.decode("utf-8", "replace"), name)
            found = await self.resolve_type(home, typed, cls.start) if typed else []
            if found:
                return found
        return []

    async def source(self, path: str) -> Source | None:
        """A file as the resolution reads it (a changed file's own, or one read now)."""
        if path not in self.sources:
            parsed = await self.index.parsed(path)
            if parsed is None:
                return None
            defs = list((await self.index.facts(path)).definitions or ())
            self.sources[path] = Source(path, parsed, defs, bindings(parsed), None)
        return self.sources[path]

    async def in_module(self, src: Source, use: UsedName, target: Target) -> Found:
        paths: Sequence[str] = target.paths
        binding = src.bound(use.root or "")
        if src.family == "python" and binding is not None and use.qualifier:
            dotted = ".".join([_python_base(binding), *use.qualifier.split(".")[1:]])
            prefix = self.resolver.python_prefix(dotted, src.path)
            if prefix is None:
                return OUTSIDE
            path, rest = prefix
            if rest:  # `module.Class.name`
                classes = await self.defined_in([path], rest[0], top_level=True)
                return await self.member_of(classes, use)
            paths = [path]
        defs = await self.defined_in(paths, use.name, top_level=True)
        if not defs:  # `import flask; flask.Flask`: a package re-exporting what it imports
            defs = await self.reexported(paths, use.name)
        return Found(defs, "import") if defs else OUTSIDE

    async def reexported(self, paths: Sequence[str], name: str) -> tuple[Definition, ...]:
        """`name` as the modules `paths` import it (`from .app import Flask as Flask`),
        followed as `through` follows an import."""
        for path in paths:
            inner = await self.source(path)
            binding = inner.bound(name) if inner is not None else None
            if inner is not None and binding is not None:
                found = await self.through(inner, binding, name, depth=1)
                if found:
                    return found
        return ()

    async def member_of(self, owners: Sequence[Definition], use: UsedName) -> Found:
        """`name` in the class(es) `owners`: the method; for a field (or an inherited
        method), the class itself."""
        classes = [d for d in owners if d.kind in CLASS_KINDS]
        if not classes:
            return Found(tuple(owners), "import") if owners else OUTSIDE
        for cls in classes:
            facts = await self.index.facts(cls.path)
            members = [
                d for d in facts.definitions or () if d.parent == cls.name and d.name == use.name
            ]
            if members:
                return Found(tuple(members), "class", owner=cls)
        return Found((classes[0],), "class", owner=classes[0])

    async def unknown_type(self, src: Source, use: UsedName) -> Found:
        """`x.name` with `x` of unknown type: a method of that name in a class the file
        imports or uses, when only one has it; else the index."""
        candidates: list[Definition] = []
        for cls in await self.used_classes(src):
            facts = await self.index.facts(cls.path)
            candidates += [
                d for d in facts.definitions or () if d.parent == cls.name and d.name == use.name
            ]
        if len(candidates) == 1:
            owner = next((c for c in src.known_classes if c.name == candidates[0].parent), None)
            return Found(tuple(candidates), "class", owner=owner)
        found = await self.in_index(src, use.name, members=True)
        return found

    async def used_classes(self, src: Source) -> list[Definition]:
        if not src.imports_read:
            src.imports_read = True
            await self._imported_classes(src)
        return list(src.known_classes) + [
            d for d in src.defs if d.kind in CLASS_KINDS and d not in src.known_classes
        ]

    async def _imported_classes(self, src: Source) -> None:
        for binding in src.bindings:
            if binding.wildcard or binding.member is None:
                continue
            target = self.target(src, binding)
            if target is not None and target.member is not None:
                self._learn(src, Found(await self.through(src, binding, binding.local)))


_EXPORT_DEFAULT_NAME = re.compile(rb"^export\s+default\s+([A-Za-z_$][\w$]*)\s*;?\s*$", re.M)


def _default_export(defs: Sequence[Definition], data: bytes) -> list[Definition]:
    """The definition `export default` opens, or the one `export default Name;` names."""
    lines = data.split(b"\n")
    opened = [d for d in defs if d.parent is None and b"export default" in lines[d.start - 1]]
    if opened:
        return opened[:1]
    named = _EXPORT_DEFAULT_NAME.search(data)
    wanted = named.group(1).decode() if named else None
    return [d for d in defs if d.parent is None and d.name == wanted][:1]


def _python_base(binding: Binding) -> str:
    """The module a Python binding's local name stands for: `a` for `import a.b.c`, `a.b`
    for `import a.b as x`, `a.b` for `from a import b`."""
    if binding.member is None:
        first = binding.module.split(".")[0]
        return first if binding.local == first else binding.module
    sep = "" if binding.module.endswith(".") else "."
    return f"{binding.module}{sep}{binding.member}"


def _prefer_types(defs: Sequence[Definition]) -> list[Definition]:
    """A class and its constructors share a name: the class stands for them."""
    classes = {(d.path, d.name) for d in defs if d.kind in CLASS_KINDS}
    return [d for d in defs if not (d.kind == "constructor" and (d.path, d.name) in classes)]


def nearest(defs: Sequence[Definition], path: str) -> list[Definition]:
    """Non-test files first, then the nearest to `path`."""
    return sorted(
        defs, key=lambda d: (is_test_path(d.path), distance(d.path, path), d.path, d.start)
    )


def _enclosing_class(defs: Sequence[Definition], line: int) -> Definition | None:
    classes = [d for d in defs if d.kind in CLASS_KINDS and d.contains(line)]
    return min(classes, key=lambda d: d.end - d.start) if classes else None


_TYPE = r"(&?[A-Za-z_][\w]*(?:\.[A-Z]\w*)?)"
# What `stated_type` finds that is no class of the repository: builtin types, keywords.
_NOT_TYPES = frozenset(
    {"str", "bytes", "list", "dict", "set", "tuple", "bool", "object", "string", "number",
     "boolean", "any", "unknown", "void", "never", "null", "undefined", "error", "byte",
     "rune", "char", "double", "long", "short", "var", "val", "let", "const", "func",
     "self", "this", "await", "new", "None", "True", "False", "nil", "true", "false",
     "chan", "map", "struct", "interface", "return", "if", "else", "for", "in", "is",
     "not", "and", "or", "lambda", "yield", "typeof", "instanceof", "Promise", "String",
     "Number", "Boolean", "Object", "Array", "Map", "Set", "Optional", "List", "Dict"}
)  # fmt: skip
_SEPARATORS = re.compile(r"\s*(?:\?\.|\.|::|->)\s*")


def segments(qualifier: str) -> list[str]:
    """`self.repo` -> [self, repo]; `a?.b::c` -> [a, b, c]."""
    return [s for s in _SEPARATORS.split(qualifier) if s]


def _outside_names(family: str) -> frozenset[str]:
    names = _OUTSIDE_BARE.get(family, frozenset())
    return names | _PY_OUTSIDE if family == "python" else names


def local_type(data: bytes, defs: Sequence[Definition], name: str, line: int) -> str | None:
    """The type the function around `line` states for a local name or parameter before
    that line (see `stated_type`)."""
    scope = innermost(defs, line)
    first = scope.start if scope is not None else max(1, line - 60)
    text = b"\n".join(data.split(b"\n")[first - 1 : line]).decode("utf-8", "replace")
    return stated_type(text, name)


def stated_type(text: str, name: str) -> str | None:
    """The type `text` states for `name`: `x: T`, `x = T(...)`, `x = new T(`, `T x`,
    `x := &T{`, `x *T` (a Go receiver, parameter or field); `pkg.T` keeps its qualifier.
    None when nothing says, or only a builtin type does."""
    n = re.escape(name)
    patterns = [
        rf"\b{n}\s*:\s*[\"']?{_TYPE}",  # Python, TypeScript, Kotlin annotations
        rf"\b{n}\s*=\s*(?:await\s+|new\s+)?{_TYPE}\s*[({{]",  # construction
        rf"\b{n}\s*:=\s*&?{_TYPE}\s*[({{]",  # Go
        rf"\b{n}\s+\*?{_TYPE}\s*[,)\n]",  # Go: a receiver, a parameter, a struct field
        rf"\b{_TYPE}(?:<[^>]*>)?\s+{n}\s*[=;,)]",  # Java, C#, C: `T x = ...`
    ]
    for pattern in patterns:
        for match in re.finditer(pattern, text):
            found = match.group(1).lstrip("&")
            if found not in _NOT_TYPES and not found.startswith(("int", "uint", "float")):
                return found
    return None

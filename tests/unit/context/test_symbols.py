"""Definitions of a file in every language the grammars read, the symbols a change touches,
the names changed lines use, and the names a file's imports bind."""

from __future__ import annotations

import pytest

from bot.context.bindings import Binding, bindings, package_of
from bot.context.symbols import changed_symbols, definitions, parse
from bot.context.uses import UsedName, used_names


def defs_of(path: str, text: str) -> list[tuple[str, str, int, int]]:
    """(kind, qualified name, start, end) of each definition."""
    parsed = parse(path, text)
    assert parsed is not None
    return [(d.kind, d.qualified, d.start, d.end) for d in definitions(parsed)]


PYTHON = '''import os


@dataclass
class User(Base):
    """A user."""

    id: int
    name: str = ""

    @property
    def label(self) -> str:
        """Its label."""
        return self.name

    def save(
        self,
        force: bool,
    ) -> None:
        pass


async def top():
    def inner():
        pass
'''

# (path, source, expected (kind, qualified, start, end))
SAMPLES = [
    (
        "m.py",
        PYTHON,
        [
            ("class", "User", 4, 20),
            ("method", "User.label", 11, 14),
            ("method", "User.save", 16, 20),
            ("function", "top", 23, 25),
        ],
    ),
    (
        "m.ts",
        "/** A. */\nexport default class A extends B {\n  field = 1;\n"
        "  go = (x: number) => x;\n  m(): void {}\n}\n"
        "export const f = async () => {};\nexport interface I { x(): void }\n"
        "export type T = string;\nenum E { A }\nnamespace NS {\n  export function g() {}\n}\n",
        [
            ("class", "A", 2, 6),
            ("method", "A.go", 4, 4),
            ("method", "A.m", 5, 5),
            ("function", "f", 7, 7),
            ("interface", "I", 8, 8),
            ("type", "T", 9, 9),
            ("enum", "E", 10, 10),
            ("function", "g", 12, 12),
        ],
    ),
    (
        "m.js",
        "function a() {}\nclass K {\n  b() {}\n}\nconst c = function () {};\n"
        "module.exports = { a };\n",
        [("function", "a", 1, 1), ("class", "K", 2, 4), ("method", "K.b", 3, 3),
         ("function", "c", 5, 5)],
    ),
    (
        "m.tsx",
        "export function Card({ n }: { n: number }) {\n  return <div>{n}</div>;\n}\n",
        [("function", "Card", 1, 3)],
    ),
    (
        "m.go",
        "package m\n\n// S is.\ntype S struct {\n\tA int\n}\n\ntype (\n\tT = int\n"
        "\tI interface{ X() }\n)\n\nfunc (s *S) M() {}\n\nfunc F[T any](x T) {}\n",
        [("struct", "S", 4, 6), ("type", "T", 9, 9), ("interface", "I", 10, 10),
         ("method", "S.M", 13, 13), ("function", "F", 15, 15)],
    ),
    (
        "M.java",
        "package p;\n\n@Entity\npublic class User extends Base {\n  private int id;\n"
        "  public User() {}\n  @Override\n  public int get() { return id; }\n"
        "  enum Kind { A; void k() {} }\n}\ninterface I { void m(); }\nrecord R(int x) {}\n",
        [("class", "User", 3, 10), ("constructor", "User.User", 6, 6),
         ("method", "User.get", 7, 8), ("enum", "User.Kind", 9, 9), ("method", "Kind.k", 9, 9),
         ("interface", "I", 11, 11), ("method", "I.m", 11, 11), ("record", "R", 12, 12)],
    ),
    (
        "m.kt",
        "package p\n\ndata class User(val id: Long) {\n  fun greet(): String = \"hi\"\n"
        "  companion object {\n    fun make() = User(1)\n  }\n}\nobject Reg {\n  fun x() {}\n}\n"
        "interface Api {\n  fun y()\n}\nenum class Color { RED }\ntypealias Ids = List<Long>\n"
        "fun String.ext(): Int {\n  return 1\n}\n",
        [("class", "User", 3, 8), ("method", "User.greet", 4, 4), ("method", "User.make", 6, 6),
         ("object", "Reg", 9, 11), ("method", "Reg.x", 10, 10), ("interface", "Api", 12, 14),
         ("method", "Api.y", 13, 13), ("enum", "Color", 15, 15), ("type", "Ids", 16, 16),
         ("function", "ext", 17, 19)],
    ),
    (
        "m.rs",
        "/// doc\n#[derive(Debug)]\npub struct User { id: u64 }\nimpl User {\n"
        "    pub fn new(id: u64) -> Self { User { id } }\n}\ntrait T { fn d(&self) {} }\n"
        "enum E { A }\nfn f() {}\nmod m { fn g() {} }\n",
        [("struct", "User", 3, 3), ("method", "User.new", 5, 5), ("trait", "T", 7, 7),
         ("method", "T.d", 7, 7), ("enum", "E", 8, 8), ("function", "f", 9, 9),
         ("function", "g", 10, 10)],
    ),
    (
        "m.rb",
        "class Foo < Base\n  def bar(x)\n    x\n  end\n\n  def self.make\n  end\nend\n"
        "module M\nend\ndef top; end\n",
        [("class", "Foo", 1, 8), ("method", "Foo.bar", 2, 4), ("method", "Foo.make", 6, 7),
         ("module", "M", 9, 10), ("function", "top", 11, 11)],
    ),
    (
        "m.c",
        "#ifndef M_H\n#define M_H\ntypedef struct { int a; } Point;\nstruct node { int v; };\n"
        "struct node *mk(void);\nstatic int add(int a, int b) { return a + b; }\n#endif\n",
        [("struct", "Point", 3, 3), ("struct", "node", 4, 4), ("function", "add", 6, 6)],
    ),
    (
        "m.cpp",
        "namespace ns {\nclass A : public B {\n public:\n"
        "  int f(int x) { return x; }\n  int h();\n};\n"
        "template <typename T> T id(T x) { return x; }\n}\nint ns::A::h() { return 1; }\n",
        [("class", "A", 2, 6), ("method", "A.f", 4, 4), ("function", "id", 7, 7),
         ("method", "A.h", 9, 9)],
    ),
    (
        "m.cs",
        "namespace N;\npublic class A : B {\n  public A() {}\n"
        "  /// doc\n  public void F(int x) { }\n}\n"
        "public record R(int X);\nnamespace Q { public interface I { void M(); } }\n",
        [("class", "A", 2, 6), ("constructor", "A.A", 3, 3), ("method", "A.F", 5, 5),
         ("record", "R", 7, 7), ("interface", "I", 8, 8), ("method", "I.M", 8, 8)],
    ),
    (
        "m.php",
        "<?php\nnamespace App;\nclass A extends B {\n  public function f($x) { }\n}\n"
        "function top() {}\ntrait T { public function t() {} }\n",
        [("class", "A", 3, 5), ("method", "A.f", 4, 4), ("function", "top", 6, 6),
         ("trait", "T", 7, 7), ("method", "T.t", 7, 7)],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("path", "source", "expected"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_definitions_in_every_language(
    path: str, source: str, expected: list[tuple[str, str, int, int]]
) -> None:
    assert defs_of(path, source) == expected


def test_signatures_docstrings_doc_comments_and_a_data_models_fields() -> None:
    parsed = parse("m.py", PYTHON)
    assert parsed is not None
    user, label, save, _ = definitions(parsed)
    assert (user.signature_end, user.doc, user.fields_end) == (5, (6, 6), 10)
    assert (label.signature_end, label.doc) == (12, (13, 13))
    assert save.signature_end == 19  # `) -> None:`

    go = parse("m.go", "package m\n\n// S is a thing.\n// It is.\ntype S struct {\n\tA int\n}\n")
    assert go is not None
    [struct] = definitions(go)
    assert (struct.doc, struct.signature_end, struct.fields_end) == ((3, 4), 5, 7)

    java = parse("A.java", "/**\n * An A.\n */\n@Entity\nclass A {\n  int x;\n  void m() {}\n}\n")
    assert java is not None
    cls, _ = definitions(java)
    assert (cls.start, cls.doc, cls.fields_end) == (4, (1, 3), 6)

    kt = parse("a.kt", "/** Pays. */\nfun pay(\n  amount: Int,\n): Int {\n  return amount\n}\n")
    assert kt is not None
    [pay] = definitions(kt)
    assert (pay.doc, pay.signature_end) == ((1, 1), 4)

    js = parse(
        "a.js", "// Adds.\n// Two numbers.\nexport function add(a, b) {\n  return a + b;\n}\n"
    )
    assert js is not None
    [add] = definitions(js)
    assert add.doc == (1, 2)


def test_changed_symbols_are_innermost() -> None:
    # A changed method body: the method, not its class.
    assert [
        (s.definition.qualified, s.lines) for s in changed_symbols("m.py", PYTHON, [(14, 14)])
    ] == [("User.label", (14,))]
    # A changed field or class header: the class.
    assert [s.definition.qualified for s in changed_symbols("m.py", PYTHON, [(9, 9)])] == ["User"]
    assert [s.definition.qualified for s in changed_symbols("m.py", PYTHON, [(5, 5)])] == ["User"]
    # A run across two methods; the blank line between them touches nothing.
    assert [s.definition.qualified for s in changed_symbols("m.py", PYTHON, [(14, 17)])] == [
        "User.label",
        "User.save",
    ]
    # A docstring line belongs to its function; top-level code to nothing.
    assert [
        s.definition.qualified for s in changed_symbols("m.py", PYTHON, [(13, 13), (1, 1)])
    ] == ["User.label"]
    # A nested function's change is its top-level function's.
    [top] = changed_symbols("m.py", PYTHON, [(25, 25)])
    assert (top.definition.name, top.added) == ("top", False)


def test_a_new_definition_is_marked_added() -> None:
    text = "def old():\n    pass\n\n\ndef new():\n    return old()\n"
    [new] = changed_symbols("m.py", text, [(4, 6)])
    assert (new.definition.name, new.added) == ("new", True)


def test_a_comment_above_a_method_is_the_methods() -> None:
    text = "class A {\n  int x;\n\n  // Pays.\n  void pay() {}\n}\n"
    assert [s.definition.qualified for s in changed_symbols("A.java", text, [(4, 4)])] == ["A.pay"]


def uses(path: str, text: str, runs: list[tuple[int, int]]) -> set[tuple[str, str | None, str]]:
    parsed = parse(path, text)
    assert parsed is not None
    return {(u.name, u.qualifier, u.kind) for u in used_names(parsed, runs)}


def test_used_names_in_python() -> None:
    text = (
        "class A(Base, mixins.Audit):\n"
        "    @cached\n"
        "    def f(self, s: Service) -> list[User]:\n"
        "        svc.delete(Model.column == 1, Doc())\n"
        "        return self.repo.get(x)[0].value\n"
    )
    found = uses("m.py", text, [(1, 5)])
    assert {
        ("Base", None, "base"),
        ("Audit", "mixins", "base"),
        ("cached", None, "decorator"),
        ("Service", None, "type"),
        ("User", None, "type"),
        ("delete", "svc", "call"),
        ("column", "Model", "attribute"),
        ("Doc", None, "call"),
        ("get", "self.repo", "call"),
        ("value", "?", "attribute"),
    } <= found
    assert ("f", None, "call") not in found and ("A", None, "type") not in found
    # Only the changed lines count.
    assert uses("m.py", text, [(4, 4)]) == {
        ("delete", "svc", "call"),
        ("column", "Model", "attribute"),
        ("Doc", None, "call"),
    }


def test_used_names_in_go_java_typescript_and_kotlin() -> None:
    go = (
        "package m\n\nfunc F(u m.User) error {\n"
        "\tx := &store.Order{}\n\treturn helper(x.Total)\n}\n"
    )
    assert {
        ("User", "m", "type"),
        ("Order", "store", "construct"),
        ("helper", None, "call"),
        ("Total", "x", "attribute"),
    } <= uses("m.go", go, [(3, 5)])
    java = (
        "class A extends B implements C {\n"
        "  List<Foo> f(Bar b) { return Util.make(new Foo()); }\n}\n"
    )
    assert {
        ("B", None, "base"),
        ("C", None, "base"),
        ("Foo", None, "construct"),
        ("Bar", None, "type"),
        ("make", "Util", "call"),
    } <= uses("A.java", java, [(1, 2)])
    ts = "class A extends B {\n  m(p: Bar): Baz { return new S().get(this.x, <Card />); }\n}\n"
    assert {
        ("B", None, "base"),
        ("Bar", None, "type"),
        ("S", None, "construct"),
        ("get", "?", "call"),
        ("x", "this", "attribute"),
        ("Card", None, "construct"),
    } <= uses("a.tsx", ts, [(1, 2)])
    kt = "fun f(p: Foo): Int {\n  val u = User(1)\n  return Baz.run(u.name)\n}\n"
    assert {
        ("Foo", None, "type"),
        ("User", None, "call"),
        ("run", "Baz", "call"),
        ("name", "u", "attribute"),
    } <= uses("a.kt", kt, [(1, 3)])


def test_bindings_and_packages() -> None:
    py = parse(
        "pkg/m.py",
        "import a.b.c\nimport a.b as x\nfrom . import y\nfrom ..p import (R, S as T)\n"
        "def f():\n    from z import w\n",
    )
    assert py is not None
    assert [(b.local, b.module, b.member) for b in bindings(py)] == [
        ("a", "a.b.c", None),
        ("x", "a.b", None),
        ("y", ".", "y"),
        ("R", "..p", "R"),
        ("T", "..p", "S"),
        ("w", "z", "w"),
    ]
    ts = parse(
        "a.ts",
        'import D, { A as B } from "./m";\nimport * as ns from "../x";\n'
        'export { Q } from "./q";\nconst { c } = require("./r");\n',
    )
    assert ts is not None
    assert [(b.local, b.module, b.member) for b in bindings(ts)] == [
        ("D", "./m", "default"),
        ("B", "./m", "A"),
        ("ns", "../x", None),
        ("Q", "./q", "Q"),
        ("c", "./r", "c"),
    ]
    go = parse(
        "a.go",
        'package svc\n\nimport (\n\t"fmt"\n'
        '\tm "example.com/app/models"\n\t"example.com/app/v2"\n)\n',
    )
    assert go is not None
    assert [(b.local, b.module) for b in bindings(go)] == [
        ("fmt", "fmt"),
        ("m", "example.com/app/models"),
        ("app", "example.com/app/v2"),
    ]
    assert package_of(go) == "svc"
    kt = parse(
        "a.kt", "package com.x\n\nimport com.a.Foo\nimport com.b.*\nimport com.c.Bar as Baz\n"
    )
    assert kt is not None
    assert bindings(kt) == [
        Binding("Foo", "com.a", "Foo", 3),
        Binding("*", "com.b", None, 4, wildcard=True),
        Binding("Baz", "com.c", "Bar", 5),
    ]
    assert package_of(kt) == "com.x"


def test_a_file_without_a_grammar_has_no_symbols() -> None:
    assert parse("notes.txt", "def f(): pass") is None
    assert changed_symbols("notes.txt", "def f(): pass", [(1, 1)]) == []
    assert UsedName("f", "a.b", "call", 1).root == "a"

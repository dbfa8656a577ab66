"""Widening a hunk to its enclosing function or class, per language, within the limit."""

from __future__ import annotations

import pytest

from bot.context.widen import widen

# (language, path, source, changed line, the enclosing definition's first and last line)
SAMPLES = [
    (
        "python",
        "m.py",
        (
            "import os\n\n\nclass A:\n    def f(self):\n        x = 1\n"
            "        return x\n\n\ndef g():\n    pass\n"
        ),
        6,
        (5, 7),
    ),
    (
        "javascript",
        "m.js",
        ("const a = 1;\nfunction f(x) {\n  const y = x + 1;\n  return y;\n}\nf(2);\n"),
        3,
        (2, 5),
    ),
    (
        "typescript",
        "m.ts",
        ("export class A {\n  f(x: number): number {\n    return x + 1;\n  }\n}\nconst b = 2;\n"),
        3,
        (2, 4),
    ),
    (
        "typescript",
        "m.tsx",
        (
            "import React from 'react';\n"
            "export function C(): JSX.Element {\n  const n = 1;\n"
            "  return <div>{n}</div>;\n}\n"
        ),
        3,
        (2, 5),
    ),
    (
        "go",
        "m.go",
        ("package m\n\nfunc (a *A) F() int {\n\tx := 1\n\treturn x\n}\n\nvar v = 1\n"),
        4,
        (3, 6),
    ),
    (
        "java",
        "M.java",
        (
            "class M {\n  int f() {\n    int x = 1;\n    return x;\n  }\n"
            "  int g() { return 2; }\n}\n"
        ),
        3,
        (2, 5),
    ),
    (
        "rust",
        "m.rs",
        (
            "struct S;\nimpl S {\n    fn f(&self) -> i32 {\n"
            "        let x = 1;\n        x\n    }\n}\n"
        ),
        4,
        (3, 6),
    ),
    ("ruby", "m.rb", "class A\n  def f\n    x = 1\n    x\n  end\nend\n", 3, (2, 5)),
    ("c", "m.c", "#include <stdio.h>\nint f(void) {\n  int x = 1;\n  return x;\n}\n", 3, (2, 5)),
    (
        "cpp",
        "m.cpp",
        ("namespace n {\nclass A {\n  int f() {\n    int x = 1;\n    return x;\n  }\n};\n}\n"),
        4,
        (3, 6),
    ),
    (
        "csharp",
        "M.cs",
        ("class M {\n  int F() {\n    var x = 1;\n    return x;\n  }\n}\n"),
        3,
        (2, 5),
    ),
    (
        "php",
        "m.php",
        ("<?php\nclass A {\n  function f() {\n    $x = 1;\n    return $x;\n  }\n}\n"),
        4,
        (3, 6),
    ),
    (
        "kotlin",
        "M.kt",
        ("class A {\n  fun f(): Int {\n    val x = 1\n    return x\n  }\n}\n"),
        3,
        (2, 5),
    ),
]


@pytest.mark.parametrize(
    ("language", "path", "source", "line", "expected"), SAMPLES, ids=[s[1] for s in SAMPLES]
)
def test_widens_to_the_enclosing_definition(
    language: str, path: str, source: str, line: int, expected: tuple[int, int]
) -> None:
    spans = widen(path, language, source, [(line, line)])
    assert [(s.start, s.end) for s in spans] == [expected]
    assert spans[0].label  # says what it is ("function f", "method f", ...)


def test_decorators_come_with_the_function() -> None:
    source = "@app.get('/')\ndef index():\n    return 1\n"
    spans = widen("app.py", "python", source, [(3, 3)])
    assert (spans[0].start, spans[0].end) == (1, 3) and "index" in spans[0].label


def test_arrow_function_assigned_to_a_constant() -> None:
    source = "const x = 1;\nconst f = (a) => {\n  return a * 2;\n};\n"
    spans = widen("m.js", "javascript", source, [(3, 3)])
    assert (spans[0].start, spans[0].end) == (2, 4)


def test_a_definition_over_the_limit_gives_a_window_within_it() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(400))
    source = f"def big():\n{body}    return 0\n"
    spans = widen("m.py", "python", source, [(200, 201)], limit=40)
    span = spans[0]
    assert span.end - span.start + 1 <= 40 and span.start <= 200 and span.end >= 201
    assert "over the 40-line limit" in span.label


def test_a_hunk_over_the_limit_is_not_widened() -> None:
    source = "x = 1\n" * 100
    assert widen("m.py", "python", source, [(1, 90)], limit=50) == []


def test_top_level_change_gets_surrounding_lines() -> None:
    source = "".join(f"X{i} = {i}\n" for i in range(50))
    span = widen("m.py", "python", source, [(25, 25)])[0]
    assert span.start < 25 < span.end and span.end - span.start <= 20


def test_indentation_fallback_for_other_text() -> None:
    source = "top:\n  service:\n    image: x\n    ports:\n      - 80\n  other:\n    a: 1\nlast: 2\n"
    span = widen("compose.yaml", "yaml", source, [(5, 5)])[0]
    assert (span.start, span.end) == (1, 7)  # the outermost block that holds the change


def test_indentation_fallback_respects_the_limit() -> None:
    inner = "".join(f"    line{i}\n" for i in range(100))
    source = f"block:\n  sub:\n{inner}  end\n"
    span = widen("x.conf", None, source, [(50, 50)], limit=30)[0]
    assert span.end - span.start + 1 <= 30


def test_nearby_changes_merge_into_one_span() -> None:
    source = "def f():\n    a = 1\n    b = 2\n    return a + b\n"
    spans = widen("m.py", "python", source, [(2, 2), (3, 3)])
    assert len(spans) == 1 and (spans[0].start, spans[0].end) == (1, 4)
    assert spans[0].label == "function f"

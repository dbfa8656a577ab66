"""Context work follows what is sent: the files are chosen first, and only the chosen text
is redacted, parsed whole and kept; a diff many budgets long costs memory by the budget,
not by the diff, and its unread part never reaches the built context."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bot.context.build as build_module
import bot.context.changed as changed_module
from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.context.build import MATERIAL_FACTOR
from bot.context.diff import iter_diff, parse_diff
from bot.context.redact import Redactor

AWS_KEY = "AKIAQWERTYUIOPASDFGH"
PATH_KEY = "AKIAZXCVBNMLKJHGFDSA"
KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
BUDGET = 4_000


def _added(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def _modified(path: str, count: int) -> str:
    """`count` lines replaced, in hunks of 5 (read_file gives no head: no context read)."""
    out = [f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n"]
    out.append(f"--- a/{path}\n+++ b/{path}\n")
    for start in range(1, count * 2, 10):
        old = [f"    total += item * {start + k}  # line {start + k}" for k in range(5)]
        out.append(f"@@ -{start},5 +{start},5 @@\n")
        out += [f"-{line}\n" for line in old] + [f"+{line}  # changed\n" for line in old]
    return "".join(out)


def _code(n: int, lines: int) -> list[str]:
    return [
        f"value_{n}_{k} = compute({k}, limit={k * 7})  # some ordinary code" for k in range(lines)
    ]


async def _nothing(path: str) -> bytes | None:
    return None


def _build(diff: str, budget: int = BUDGET) -> BuiltContext:
    return asyncio.run(
        build_context(PullRequestMeta(title="t"), diff, [], _nothing, budget_tokens=budget)
    )


def _everything(built: BuiltContext) -> str:
    return built.model_dump_json()


def test_a_secret_in_a_chosen_file_is_redacted_in_every_section() -> None:
    lines = [
        "import boto3",
        f'ACCESS_KEY = "{AWS_KEY}"',
        "PEM = '''",
        "-----BEGIN RSA PRIVATE KEY-----",
        KEY_BODY,
        KEY_BODY[::-1],
        "-----END RSA PRIVATE KEY-----",
        "'''",
    ]
    built = _build(_added("app/keys.py", lines) + _added("app/other.py", _code(1, 20)))
    shown = "".join(s.text for s in built.sections)
    assert "app/keys.py" in shown and "[REDACTED:aws-access-key]" in shown
    assert "[REDACTED:private-key]" in shown
    assert AWS_KEY not in _everything(built)
    assert KEY_BODY not in _everything(built) and KEY_BODY[::-1] not in _everything(built)
    assert built.redaction_kinds["aws-access-key"] == 1
    assert built.redaction_kinds["private-key"] >= 1


def _huge_with_secrets_last(files: int = 120, lines: int = 300) -> str:
    """Many budgets of ordinary diff, then (ranked last: smaller, path last) a file with
    secrets in its lines, one with a secret in its path and a manifest with a secret in a
    dependency line."""
    parts = [_added(f"pkg/mod_{n:03}.py", _code(n, lines)) for n in range(files)]
    secrets = [
        "import os",
        f'KEY = "{AWS_KEY}"',
        "-----BEGIN RSA PRIVATE KEY-----",
        KEY_BODY,
        "-----END RSA PRIVATE KEY-----",
    ]
    parts.append(_added("zz/values.py", secrets))
    parts.append(_added(f"zz/{PATH_KEY}.py", ["x = 1"]))
    parts.append(_added("zz/requirements.txt", [f"private-{AWS_KEY}==1.0"]))
    return "".join(parts)


def test_a_secret_past_the_material_bound_appears_nowhere_and_is_not_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Redactor] = []

    class Counting(Redactor):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(build_module, "Redactor", Counting)
    monkeypatch.setattr(changed_module, "Redactor", Counting)  # the scan's, for paths
    diff = _huge_with_secrets_last()
    bound_chars = 2 * MATERIAL_FACTOR * BUDGET * 4  # ~4 characters a token, twice over
    assert len(diff) > 6 * bound_chars  # the diff is many times what could be sent
    built = _build(diff)
    everything = _everything(built)
    for secret in (AWS_KEY, PATH_KEY, KEY_BODY):
        assert secret not in everything and secret.lower() not in everything.lower()
    assert "zz/values.py" in [f.path for f in built.files]
    assert not any(s.path and s.path.startswith("zz/") for s in built.sections)
    # What was redacted is what can be sent: the unread files' lines are not counted (the
    # path is: it is listed, redacted).
    assert built.redaction_kinds == {"aws-access-key": 1}
    assert any(f.path == "zz/[REDACTED:aws-access-key].py" for f in built.files)
    scanned = sum(r.scanned for r in made)
    assert 0 < scanned <= bound_chars


def test_signals_from_unread_files_carry_no_secret() -> None:
    built = _build(_huge_with_secrets_last())
    assert [d.manifest for d in built.signals.dependencies] == ["zz/requirements.txt"]
    signals = built.signals.model_dump_json().lower()
    assert AWS_KEY.lower() not in signals and PATH_KEY.lower() not in signals


def _peak(diff: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        _build(diff, budget=20_000)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_follows_the_budget_not_the_diff() -> None:
    small = "".join(_modified(f"pkg/mod_{n:03}.py", 200) for n in range(25))  # 10k lines
    large = "".join(_modified(f"pkg/mod_{n:03}.py", 200) for n in range(100))  # 40k lines
    _build(small)  # warm: regex compiles, imports
    small_peak, large_peak = _peak(small), _peak(large)
    assert large_peak <= 1.5 * small_peak, (small_peak, large_peak)


_LINES = st.sampled_from(
    [
        "diff --git a/x.py b/x.py",
        "diff --git a/y z.py b/y z.py",
        "--- a/x.py",
        "+++ b/x.py",
        "--- /dev/null",
        "+++ b/new.py",
        "index 1111111..2222222 100644",
        "new file mode 100644",
        "@@ -1,2 +1,2 @@",
        "@@ -1 +1,3 @@ def f():",
        "@@ -0,0 +1 @@",
        " context",
        "-removed",
        "+added",
        "+added\r",
        "\\ No newline at end of file",
        "",
        "a mail signature",
        "Binary files a/b.png and b/b.png differ",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=40), st.booleans())
def test_each_file_parses_alone_from_its_offsets(lines: list[str], trailing: bool) -> None:
    text = "\n".join(lines) + ("\n" if trailing else "")
    found = list(iter_diff(text))
    assert [parsed for parsed, _, _ in found] == parse_diff(text)
    for parsed, start, end in found:
        assert parse_diff(text[start:end]) == [parsed]

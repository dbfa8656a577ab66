"""Diff parsing: every shape git produces, and anything else without raising."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.context import ChangedFile, PullRequestMeta, build_context
from bot.context.diff import decode_diff, parse_diff


async def _absent(path: str) -> bytes | None:
    return None


def files_of(diff: str | bytes) -> dict[str, ChangedFile]:
    return {f.info.path: f.info for f in parse_diff(decode_diff(diff))}


ADDED = """diff --git a/new.py b/new.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+def f():
+    return 1
"""
DELETED = """diff --git a/old.py b/old.py
deleted file mode 100644
index 1111111..0000000
--- a/old.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def f():
-    return 1
"""
RENAMED_PURE = """diff --git a/a/x.py b/b/y.py
similarity index 100%
rename from a/x.py
rename to b/y.py
"""
RENAMED_CHANGED = """diff --git a/src/one.txt b/src/two.txt
similarity index 80%
rename from src/one.txt
rename to src/two.txt
index 1111111..2222222 100644
--- a/src/one.txt
+++ b/src/two.txt
@@ -1,3 +1,3 @@
 a
-b
+B
 c
"""
COPIED = """diff --git a/lib.py b/lib_copy.py
similarity index 100%
copy from lib.py
copy to lib_copy.py
"""
MODE_ONLY = """diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""
BINARY = """diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
"""
GIT_BINARY_PATCH = """diff --git a/blob.bin b/blob.bin
index 1111111..2222222 100644
GIT binary patch
literal 12
TcmZQzU|?ckU|?ckU|?ck

literal 0
HcmV?d00001

"""
NO_NEWLINE = """diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-old
\\ No newline at end of file
+new
\\ No newline at end of file
"""
SPACES = """diff --git a/my dir/my file.txt b/my dir/my file.txt
old mode 100644
new mode 100755
"""


def test_added_file() -> None:
    info = files_of(ADDED)["new.py"]
    assert info.change == "added" and info.added == 2 and info.deleted == 0
    assert info.new_mode == "100644" and info.hunks == 1


def test_deleted_file() -> None:
    info = files_of(DELETED)["old.py"]
    assert info.change == "deleted" and info.deleted == 2 and info.added == 0


def test_rename_without_changes() -> None:
    info = files_of(RENAMED_PURE)["b/y.py"]
    assert info.change == "renamed" and info.old_path == "a/x.py"
    assert info.similarity == 100 and info.hunks == 0


def test_rename_with_changes() -> None:
    info = files_of(RENAMED_CHANGED)["src/two.txt"]
    assert info.change == "renamed" and info.old_path == "src/one.txt"
    assert (info.added, info.deleted, info.similarity) == (1, 1, 80)


def test_copy() -> None:
    info = files_of(COPIED)["lib_copy.py"]
    assert info.change == "copied" and info.old_path == "lib.py"


def test_mode_only() -> None:
    info = files_of(MODE_ONLY)["run.sh"]
    assert info.mode_only and (info.old_mode, info.new_mode) == ("100644", "100755")


def test_binary_files() -> None:
    found = files_of(BINARY + GIT_BINARY_PATCH)
    assert found["logo.png"].binary and found["blob.bin"].binary
    # base85 data is neither header nor hunk text
    assert not any("TcmZQ" in line for f in parse_diff(GIT_BINARY_PATCH) for line in f.header)


def test_crlf_lines_are_read_and_flagged() -> None:
    diff = RENAMED_CHANGED.replace("\n", "\r\n")
    parsed = parse_diff(diff)[0]
    assert parsed.info.crlf and parsed.info.added == 1
    assert parsed.added_lines == [(2, "B")]  # no stray "\r"


def test_no_newline_at_end_of_file() -> None:
    parsed = parse_diff(NO_NEWLINE)[0]
    assert parsed.info.no_newline_at_eof and parsed.info.parse_error is None
    assert parsed.added_lines == [(1, "new")] and parsed.removed_lines == ["old"]


def test_non_utf8_is_decoded_and_flagged() -> None:
    diff = RENAMED_CHANGED.encode().replace(b"+B", b"+caf\xe9")
    info = files_of(diff)["src/two.txt"]
    assert info.non_utf8 and info.added == 1


def test_paths_with_spaces_and_quotes() -> None:
    assert files_of(SPACES)["my dir/my file.txt"].mode_only
    quoted = (
        'diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"\nold mode 100644\nnew mode 100755\n'
    )
    assert "café.txt" in files_of(quoted)


def test_empty_diff() -> None:
    assert parse_diff("") == [] and parse_diff("\n\n") == []


def test_plain_unified_diff_without_git_headers() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1,2 @@\n c\n+d\n"
    found = files_of(diff)
    assert set(found) == {"x", "y"} and found["y"].added == 1


def test_a_removed_line_that_looks_like_a_header_stays_in_its_hunk() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n--- a/y\n-+++ b/y\n"
    parsed = parse_diff(diff)
    assert len(parsed) == 1 and parsed[0].info.deleted == 2


def test_truncated_hunk_keeps_its_lines_and_says_so() -> None:
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+c\n"
    info = files_of(diff)["x"]
    assert info.parse_error and info.added == 1


async def test_every_case_together_builds() -> None:
    diff = "".join(
        [ADDED, DELETED, RENAMED_PURE, RENAMED_CHANGED, COPIED, MODE_ONLY, BINARY, NO_NEWLINE]
    )
    built = await build_context(PullRequestMeta(title="t"), diff, [], _absent)
    assert len(built.files) == 8
    assert "logo.png" in built.signals.binary_files
    assert any(o.path == "logo.png" and "binary" in o.reason for o in built.omitted)
    sent = {s.path for s in built.sections if s.kind == "diff"}
    assert {"new.py", "old.py", "b/y.py", "src/two.txt", "run.sh", "a.txt"} <= sent


_DIFF_LINE = st.one_of(
    st.sampled_from(
        ["diff --git a/f b/f", "--- a/f", "+++ b/f", "--- /dev/null", "+++ /dev/null",
         "@@ -1 +1 @@", "@@ -0,0 +1,3 @@", "@@ -1,2 +1,2 @@ def f():", "new file mode 100644",
         "deleted file mode 100644", "rename from a", "rename to b", "old mode 100644",
         "new mode 100755", "Binary files a/f and b/f differ", "GIT binary patch",
         "\\ No newline at end of file", "similarity index 90%", "copy from x", "copy to y",
         "index abc..def 100644", "", " ", "+", "-"]
    ),
    st.builds(lambda p, t: p + t, st.sampled_from([" ", "+", "-", "@@ ", "diff ", ""]),
              st.text(max_size=20)),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_DIFF_LINE, max_size=40), st.sampled_from(["\n", "\r\n"]))
def test_generated_diffs_never_crash(lines: list[str], newline: str) -> None:
    for parsed in parse_diff(newline.join(lines)):
        assert parsed.info.added == len(parsed.added_lines)
        assert all(number >= 0 for number, _ in parsed.added_lines)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    parse_diff(decode_diff(data))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_DIFF_LINE, max_size=30), st.integers(min_value=1, max_value=5_000))
def test_the_builder_never_crashes_on_generated_diffs(lines: list[str], budget: int) -> None:
    built = asyncio.run(
        build_context(
            PullRequestMeta(title="t"), "\n".join(lines), [], _absent, budget_tokens=budget
        )
    )
    assert built.tokens <= built.usable

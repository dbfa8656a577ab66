"""Nothing to review is not a review: which diffs have no changed line, and why, in words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.context.diff import decode_diff, nothing_to_review

EMPTY = "the change is empty (no changed line)"
ONE_LINE = """diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
"""
BINARY = """diff --git a/a.png b/a.png
index 1111111..2222222 100644
Binary files a/a.png and b/a.png differ
"""
GIT_BINARY_PATCH = """diff --git a/b.bin b/b.bin
new file mode 100644
index 0000000..2222222
GIT binary patch
literal 12
TcmZQzU|?ckU|?ckU|?ck

literal 0
HcmV?d00001

"""
RENAME = """diff --git a/old/name.py b/new/name.py
similarity index 100%
rename from old/name.py
rename to new/name.py
"""
MODE = """diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""
README = """# PR Council

A council of AI reviewers on your pull requests.

--- Install ---

    pip install pr-council
"""


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\r\n\n"])
def test_empty_or_blank_text_is_an_empty_change(text: str) -> None:
    assert nothing_to_review(text) == EMPTY


def test_headers_without_a_hunk_are_an_empty_change() -> None:
    header_only = "diff --git a/app.py b/app.py\nindex 1111111..2222222 100644\n"
    assert nothing_to_review(header_only) == EMPTY
    assert nothing_to_review("--- a/app.py\n+++ b/app.py\n") == EMPTY


def test_a_hunk_of_context_only_is_an_empty_change() -> None:
    assert nothing_to_review("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n b\n") == EMPTY


def test_binary_files_only_are_named() -> None:
    assert nothing_to_review(BINARY + GIT_BINARY_PATCH) == "only binary files changed: a.png, b.bin"
    assert nothing_to_review(GIT_BINARY_PATCH) == "only binary files changed: b.bin"


def test_a_binary_file_beside_a_text_change_is_reviewable() -> None:
    assert nothing_to_review(BINARY + ONE_LINE) is None


def test_a_rename_without_content_change_has_no_changed_line() -> None:
    assert nothing_to_review(RENAME) == (
        "no changed line (renames or mode changes only: old/name.py → new/name.py)"
    )


def test_a_mode_change_has_no_changed_line() -> None:
    assert nothing_to_review(MODE) == (
        "no changed line (renames or mode changes only: run.sh (mode 100644 → 100755))"
    )


def test_renames_and_modes_together_are_all_listed() -> None:
    reason = nothing_to_review(RENAME + MODE)
    assert reason == (
        "no changed line (renames or mode changes only: old/name.py → new/name.py,"
        " run.sh (mode 100644 → 100755))"
    )


def test_a_new_empty_file_is_said_so() -> None:
    added = "diff --git a/__init__.py b/__init__.py\nnew file mode 100644\nindex 0000000..e69de29\n"
    assert nothing_to_review(added) == (
        "no changed line (renames, mode changes or empty files only: __init__.py (new empty file))"
    )


def test_binary_and_renames_together_say_both() -> None:
    reason = nothing_to_review(BINARY + RENAME)
    assert reason == "no changed line (binary files: a.png; other files: old/name.py → new/name.py)"


def test_a_text_file_that_is_not_a_diff() -> None:
    assert nothing_to_review(README) == "this is not a diff"
    assert nothing_to_review("@@ -1 +1 @@\n-a\n+b\n") == "this is not a diff"  # no file header


def test_a_one_line_change_is_reviewable() -> None:
    assert nothing_to_review(ONE_LINE) is None


def test_a_diff_after_a_mail_preamble_is_reviewable() -> None:
    assert nothing_to_review("From: someone\nSubject: [PATCH] fix\n\n---\n" + ONE_LINE) is None


def test_a_crlf_change_is_reviewable() -> None:
    assert nothing_to_review(ONE_LINE.replace("\n", "\r\n")) is None


def test_non_utf8_bytes_decoded_with_replacement_are_reviewable() -> None:
    data = ONE_LINE.encode().replace(b"return 2", b"return 'caf\xe9'")
    text = decode_diff(data)
    assert "\ufffd" in text and nothing_to_review(text) is None


def test_a_deletion_alone_is_reviewable() -> None:
    deleted = "--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"
    assert nothing_to_review(deleted) is None


@given(st.text())
def test_any_text_gets_an_answer_without_raising(text: str) -> None:
    reason = nothing_to_review(text)
    assert reason is None or reason

"""Diffs the tests and benchmarks share."""

from __future__ import annotations

import difflib

# A one-file change with something for the council to find: an admin password that always
# logs in. Its new file is `FILES["app/auth.py"]` in tests.support.service.
AUTH_DIFF = """diff --git a/app/auth.py b/app/auth.py
index 1111111..2222222 100644
--- a/app/auth.py
+++ b/app/auth.py
@@ -1,2 +1,4 @@
 def login(user, password):
-    return check(user, password)
+    if password == "admin":
+        return True
+    return check(user, password)
"""


def diff_of(path: str, before: str, after: str, *, index: bool = False) -> str:
    """`path` changed from `before` to `after`, as `git diff` writes it; `index`: with the
    `index` line GitHub's diffs carry."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    header = f"diff --git a/{path} b/{path}\n"
    if index:
        header += "index 1111111..2222222 100644\n"
    return header + "".join(lines)

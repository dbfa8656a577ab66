"""Diffs the tests and benchmarks share."""

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

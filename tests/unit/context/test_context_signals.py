"""Signals on fixture diffs: languages, areas, dependencies from manifests, risky patterns."""

from __future__ import annotations

import pytest

from bot.context import PullRequestMeta, Signals, build_context
from bot.context.models import DependencyChange
from tests.support.diffs import diff_of


async def _absent(path: str) -> bytes | None:
    return None


async def signals(diff: str) -> Signals:
    return (await build_context(PullRequestMeta(title="t"), diff, [], _absent)).signals


def deps(found: Signals) -> set[tuple[str, str | None, str | None]]:
    return {(d.name, d.old, d.new) for d in found.dependencies}


MANIFESTS = [
    (
        "pyproject.toml",
        (
            '[project]\nname = "x"\nversion = "1.0"\ndependencies = [\n'
            '  "fastapi>=0.100",\n  "httpx==0.27",\n]\n'
        ),
        (
            '[project]\nname = "x"\nversion = "1.1"\ndependencies = [\n'
            '  "fastapi>=0.110",\n  "httpx==0.27",\n'
            '  "Pydantic_Core[email]>=2",\n]\n'
        ),
        {("fastapi", ">=0.100", ">=0.110"), ("pydantic-core", None, ">=2")},
    ),
    (
        "requirements.txt",
        "# pinned\nrequests==2.0\nflask\n-r base.txt\n",
        "# pinned\nrequests==2.31 ; python_version >= '3.8'\ndjango>=4.2,<5\n-r base.txt\n",
        {("requests", "==2.0", "==2.31"), ("flask", "*", None), ("django", None, ">=4.2,<5")},
    ),
    (
        "package.json",
        (
            '{\n  "name": "app",\n  "version": "1.0.0",\n'
            '  "dependencies": {\n    "react": "^17.0.2",\n'
            '    "lodash": "4.17.20"\n  },\n  "scripts": {\n'
            '    "build": "tsc"\n  }\n}\n'
        ),
        (
            '{\n  "name": "app",\n  "version": "1.0.1",\n'
            '  "dependencies": {\n    "react": "^18.2.0",\n'
            '    "lodash": "4.17.20",\n    "express": "~4.18.0"\n  },\n'
            '  "scripts": {\n    "build": "tsc -p ."\n  }\n}\n'
        ),
        {("react", "^17.0.2", "^18.2.0"), ("express", None, "~4.18.0")},
    ),
    (
        "go.mod",
        (
            "module example.com/x\n\ngo 1.21\n\nrequire (\n"
            "\tgithub.com/gin-gonic/gin v1.9.0\n"
            "\tgolang.org/x/sync v0.5.0 // indirect\n)\n"
        ),
        (
            "module example.com/x\n\ngo 1.22\n\nrequire (\n"
            "\tgithub.com/gin-gonic/gin v1.9.1\n"
            "\tgolang.org/x/sync v0.5.0 // indirect\n)\n\n"
            "require github.com/google/uuid v1.6.0\n"
        ),
        {
            ("github.com/gin-gonic/gin", "v1.9.0", "v1.9.1"),
            ("github.com/google/uuid", None, "v1.6.0"),
        },
    ),
    (
        "Cargo.toml",
        (
            '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n'
            '\n[dependencies]\nserde = "1.0"\n'
            'tokio = { version = "1.35", features = ["full"] }\n'
        ),
        (
            '[package]\nname = "x"\nversion = "0.2.0"\nedition = "2021"\n'
            '\n[dependencies]\nserde = "1.0"\n'
            'tokio = { version = "1.36", features = ["full"] }\n'
            'rand = "0.8"\n'
        ),
        {("tokio", "1.35", "1.36"), ("rand", None, "0.8")},
    ),
    (
        "pom.xml",
        (
            "<dependencies>\n  <dependency>\n"
            "    <groupId>org.springframework</groupId>\n"
            "    <artifactId>spring-core</artifactId>\n"
            "    <version>5.3.0</version>\n  </dependency>\n"
            "</dependencies>\n"
        ),
        (
            "<dependencies>\n  <dependency>\n"
            "    <groupId>org.springframework</groupId>\n"
            "    <artifactId>spring-core</artifactId>\n"
            "    <version>6.1.0</version>\n  </dependency>\n"
            "  <dependency>\n    <groupId>junit</groupId>\n"
            "    <artifactId>junit</artifactId>\n"
            "    <version>4.13.2</version>\n  </dependency>\n"
            "</dependencies>\n"
        ),
        {("spring-core", "5.3.0", "6.1.0"), ("junit", None, "4.13.2")},
    ),
    (
        "Gemfile",
        "source 'https://rubygems.org'\ngem 'rails', '~> 7.0'\ngem 'puma'\n",
        (
            "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\n"
            'gem \'puma\'\ngem "sidekiq", "7.2.0"\n'
        ),
        {("rails", "~> 7.0", "~> 7.1"), ("sidekiq", None, "7.2.0")},
    ),
]


@pytest.mark.parametrize(
    ("path", "before", "after", "expected"), MANIFESTS, ids=[m[0] for m in MANIFESTS]
)
async def test_dependencies_from_manifest_diffs(
    path: str, before: str, after: str, expected: set[tuple[str, str | None, str | None]]
) -> None:
    found = await signals(diff_of(path, before, after))
    assert deps(found) == expected
    assert all(isinstance(d, DependencyChange) and d.manifest == path for d in found.dependencies)
    assert "dependencies" in found.areas


RISKY = [
    ("app/x.py", "result = eval(user_input)", "eval"),
    ("app/x.js", "const f = new Function(body);", "eval"),
    ("app/x.py", "subprocess.run(cmd, shell=True)", "shell-injection"),
    ("app/x.py", 'os.system("rm -rf " + path)', "shell-injection"),
    ("app/x.js", "execSync(`git checkout ${branch}`);", "shell-injection"),
    ("app/x.py", 'cursor.execute(f"SELECT * FROM users WHERE id = {uid}")', "sql-concatenation"),
    ("app/x.py", 'q = "SELECT * FROM t WHERE name = \'" + name + "\'"', "sql-concatenation"),
    ("app/x.go", 'q := fmt.Sprintf("select * from t where id = %s", id)', "sql-concatenation"),
    ("app/x.py", "requests.get(url, verify=False)", "tls-verify-off"),
    ("app/x.js", "new https.Agent({ rejectUnauthorized: false })", "tls-verify-off"),
    ("app/x.go", "tls.Config{InsecureSkipVerify: true}", "tls-verify-off"),
    ("app/x.py", "except:", "broad-except"),
    ("app/x.java", "} catch (Exception e) {}", "broad-except"),
]


@pytest.mark.parametrize(
    ("path", "line", "kind"), RISKY, ids=[r[2] + ":" + r[1][:20] for r in RISKY]
)
async def test_risky_patterns_in_added_lines(path: str, line: str, kind: str) -> None:
    found = await signals(diff_of(path, "a = 1\n", f"a = 1\n{line}\n"))
    assert [(r.kind, r.path, r.line) for r in found.risky_patterns] == [(kind, path, 2)]


async def test_swallowed_exception_over_two_lines() -> None:
    after = "try:\n    go()\nexcept Exception:\n    pass\n"
    found = await signals(diff_of("app/x.py", "", after))
    assert [(r.kind, r.line) for r in found.risky_patterns] == [("broad-except", 3)]


async def test_removed_and_safe_lines_are_not_flagged() -> None:
    before = "x = eval(s)\n"
    after = "x = ast.literal_eval(s)\nrequests.get(url, verify=True)\nexcept ValueError:\n"
    assert (await signals(diff_of("app/x.py", before, after))).risky_patterns == []


async def test_auth_change_is_security_and_python() -> None:
    after = 'def login(user, password):\n    if password == "admin":\n        return True\n'
    found = await signals(diff_of("app/auth.py", "", after))
    assert found.languages == ["python"] and found.dominant_area == "security"
    assert found.source_without_tests and "source" in found.artifact_types


async def test_areas_and_artifacts_by_path() -> None:
    diff = (
        diff_of(".github/workflows/ci.yml", "on: push\n", "on: [push]\n")
        + diff_of("Dockerfile", "FROM a\n", "FROM b\n")
        + diff_of("migrations/0002_add.sql", "", "ALTER TABLE t ADD c int;\n")
        + diff_of("api/openapi.yaml", "a: 1\n", "a: 2\n")
    )
    found = await signals(diff)
    assert {"ci-cd", "infrastructure", "database", "public-api"} <= set(found.areas)
    assert {"workflow", "dockerfile", "migration", "sql", "openapi"} <= set(found.artifact_types)
    assert {"github-actions", "docker"} <= set(found.frameworks)


async def test_docs_only_and_tests_only() -> None:
    docs = await signals(diff_of("docs/guide.md", "a\n", "b\n") + diff_of("README.md", "", "x\n"))
    assert docs.areas == ["docs-only"] and docs.dominant_area == "docs-only"
    tests = await signals(diff_of("tests/test_x.py", "", "def test(): pass\n"))
    assert tests.areas == ["tests-only"] and not tests.source_without_tests


async def test_concurrency_and_performance_from_added_lines() -> None:
    after = "import threading\nlock = threading.Lock()\n@lru_cache\ndef f(): pass\n"
    found = await signals(diff_of("app/jobs.py", "", after))
    assert {"concurrency", "performance"} <= set(found.areas)


async def test_languages_by_shebang_and_frameworks_by_import() -> None:
    diff = diff_of("bin/tool", "", "#!/usr/bin/env python3\nimport django\n") + diff_of(
        "web/App.tsx", "", "import React from 'react';\nexport const A = () => null;\n"
    )
    found = await signals(diff)
    assert found.languages == ["python", "typescript"]
    assert {"django", "react"} <= set(found.frameworks)


async def test_size_and_spread() -> None:
    diff = diff_of("a/x.py", "1\n2\n", "1\n3\n4\n") + diff_of("b/c/y.py", "", "z\n")
    found = await signals(diff)
    assert (found.files_changed, found.lines_added, found.lines_deleted) == (2, 3, 1)
    assert found.directories == ["a", "b/c"]

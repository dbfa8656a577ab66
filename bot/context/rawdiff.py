"""The raw-diff context: the unified diff, file by file, within a token budget.

The first, simple context: whole file diffs in their order until the budget is spent, never
cutting a line; what did not fit is listed by path. The context builder replaces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from bot.tokens import TokenEstimator, default_estimator

_FILE_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)

LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".php": "php",
    ".kt": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sql": "sql",
    ".sh": "shell",
    ".tf": "terraform",
}
AREA_HINTS = {
    "security": ("auth", "login", "password", "token", "secret", "crypto", "permission", "session"),
    "database": ("migration", "models.py", "schema", ".sql", "alembic", "db/"),
    "ci-cd": (".github/workflows", ".gitlab-ci", "jenkinsfile", ".ci/"),
    "infrastructure": ("dockerfile", "docker-compose", ".tf", "k8s", "kubernetes", "helm"),
    "dependencies": (
        "requirements",
        "pyproject.toml",
        "package.json",
        "go.mod",
        "cargo.toml",
        "gemfile",
        "pom.xml",
        "constraints.txt",
        "lock",
    ),
    "public-api": ("api/", "openapi", "routes", "endpoints", "__init__.py"),
    "concurrency": ("async", "thread", "worker", "queue", "lock"),
    "frontend": (".css", ".html", ".tsx", ".jsx", ".vue", "components/"),
}


@dataclass
class FileDiff:
    path: str
    text: str
    tokens: int


@dataclass
class RawContext:
    files: list[FileDiff]
    included: list[str]
    omitted: list[str]
    tokens: int
    budget: int
    languages: list[str] = field(default_factory=list)
    areas: list[str] = field(default_factory=list)


def split_diff(diff: str) -> list[tuple[str, str]]:
    """(path, that file's diff) in order; a diff without git headers is one piece."""
    starts = list(_FILE_HEADER.finditer(diff))
    if not starts:
        return [("(diff)", diff)] if diff.strip() else []
    pieces = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(diff)
        pieces.append((match.group(2), diff[match.start() : end]))
    return pieces


def build_raw_context(
    diff: str, budget_tokens: int, estimator: TokenEstimator | None = None
) -> RawContext:
    estimate = (estimator or default_estimator()).estimate
    files: list[FileDiff] = []
    omitted: list[str] = []
    used = 0
    for path, text in split_diff(diff):
        tokens = estimate(text)
        if used + tokens <= budget_tokens:
            files.append(FileDiff(path, text, tokens))
            used += tokens
        else:
            omitted.append(
                f"{path}: does not fit the {budget_tokens:,}-token budget ({tokens:,} tokens)"
            )
    paths = [path for path, _ in split_diff(diff)]
    return RawContext(
        files=files,
        included=[f.path for f in files],
        omitted=omitted,
        tokens=used,
        budget=budget_tokens,
        languages=_languages(paths),
        areas=_areas(paths, diff),
    )


def _languages(paths: list[str]) -> list[str]:
    found = {LANGUAGES.get(PurePosixPath(p).suffix.lower()) for p in paths}
    return sorted(lang for lang in found if lang)


def _areas(paths: list[str], diff: str) -> list[str]:
    lowered = [p.lower() for p in paths]
    areas = {
        area for area, hints in AREA_HINTS.items() if any(h in p for p in lowered for h in hints)
    }
    if paths and all(p.endswith((".md", ".rst", ".txt")) for p in lowered):
        areas.add("docs-only")
    if paths and all("test" in p for p in lowered):
        areas.add("tests-only")
    return sorted(areas)

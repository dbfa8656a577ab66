"""Signals: what a change is about, for board scoring and for the prompt.

Read from paths and from the added lines (the change itself), never from the whole
repository, so a file that merely mentions "password" somewhere does not make every
change a security review.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from bot.context.classify import CODE_LANGUAGES, artifact_types, is_manifest
from bot.context.constructs import (
    DATABASE_IMPORTS,
    QUERY_HINT,
    around_evidence,
    line_evidence,
)
from bot.context.diff import ParsedFile
from bot.context.imports import imports_of
from bot.context.intent import intent_words
from bot.context.manifests import dependency_changes
from bot.context.models import (
    ChangedFile,
    ChangeEvidence,
    CodeLocation,
    DependencyChange,
    PullRequestMeta,
    RiskyPattern,
    Signals,
)
from bot.context.prose import has_bidi

# Tie-break order for the dominant area: what most needs a specialist first.
AREA_ORDER = (
    "security", "database", "dependencies", "ci-cd", "infrastructure", "public-api",
    "concurrency", "performance", "frontend", "docs-only", "tests-only",
)  # fmt: skip
# How much a changed line in an area counts toward the dominant area.
AREA_WEIGHT = {"security": 3, "database": 2}
_AREA_PATHS: dict[str, re.Pattern[str]] = {
    area: re.compile(rx, re.IGNORECASE)
    for area, rx in {
        "security": r"auth|login|passw|token|secret|crypt|permission|session|oauth|jwt|acl"
        r"|rbac|security|csrf|sanitiz|credential|signature|verify",
        "database": r"migration|alembic|(?:^|/)models?[./]|schema|\.sql$|(?:^|/)db/|reposit"
        r"|(?:^|/)dao/|database|store/",
        "public-api": r"(?:^|/)api/|routes?[./]|endpoints?|openapi|swagger|controllers?/"
        r"|handlers?/|\.proto$|\.graphql$|(?:^|/)__init__\.py$|\.d\.ts$",
        "ci-cd": r"\.github/workflows/|\.gitlab-ci|jenkinsfile|\.circleci/|(?:^|/)\.ci/",
        "infrastructure": r"dockerfile|compose[^/]*\.ya?ml$|(?:^|/)(?:k8s|kubernetes|helm"
        r"|charts|deploy|infra|terraform|ansible)/|\.tf$|\.tfvars$",
        "concurrency": r"thread|concurren|(?:^|/)(?:worker|queue|locks?|sync)[/._]",
        "performance": r"perf|bench|cache|(?:^|/)hot",
        "frontend": r"\.(?:css|scss|html|jsx|tsx|vue|svelte)$|components?/",
    }.items()
}
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
MAX_EVIDENCE = 20  # what the added lines do: the first this many findings are kept
_DOC_NAMES = re.compile(r"^(?:license|copying|authors|notice|changelog|readme)", re.IGNORECASE)

_RISKY: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx))
    for kind, rx in (
        ("eval", r"(?<![\w.$])(?:eval|exec)\s*\(|\bnew\s+Function\s*\(|\binstance_eval\b"),
        (
            "shell-injection",
            r"\bshell\s*=\s*True|\bos\.(?:system|popen)\s*\(|\bRuntime\.getRuntime\(\)\.exec"
            r"|\b(?:execSync|exec)\s*\(\s*(?:`[^`]*\$\{|[\"'][^\"']*[\"']\s*\+)"
            r"|\b(?:shell_exec|passthru|proc_open)\s*\(|\bsystem\s*\(\s*[\"'][^\"']*#\{"
            r"|`[^`\n]*#\{[^}]*\}[^`\n]*`|exec\.Command\(\s*\"(?:sh|bash)\"",
        ),
        (
            "sql-concatenation",
            r"(?i:\bf[\"'](?:select|insert|update|delete|drop|alter)\b[^\"']*\{"
            r"|(?P<q>[\"'`])\s*(?:select\s|insert\s+into|update\s+\w+\s+set|delete\s+from)"
            r"(?:(?!(?P=q)).)*(?P=q)\s*(?:\+|%\s*[(\w]|\.format\()"
            r"|[`](?:select|insert|update|delete)\b[^`]*\$\{"
            r"|\bfmt\.Sprintf\(\s*\"(?:select|insert|update|delete)\b)",
        ),
        (
            "tls-verify-off",
            r"\bverify\s*=\s*False|rejectUnauthorized\s*:\s*false|InsecureSkipVerify\s*:\s*true"
            r"|NODE_TLS_REJECT_UNAUTHORIZED|_create_unverified_context|\bCERT_NONE\b"
            r"|check_hostname\s*=\s*False|CURLOPT_SSL_VERIFY(?:PEER|HOST)\s*,\s*(?:false|0)"
            r"|danger_accept_invalid_certs\(\s*true|(?i:trustallcerts|noophostnameverifier)"
            r"|strict-ssl\s*[=:]?\s*false|curl\s+(?:-k|--insecure)\b",
        ),
        (
            "broad-except",
            r"^\s*except\s*:|^\s*except\s+(?:Base)?Exception\b[^:]*:\s*(?:pass|\.\.\.)?\s*$"
            r"|\bcatch\s*(?:\([^)]*\))?\s*\{\s*\}|\brescue\s+Exception\b|\brescue\s+nil\b"
            r"|\bcatch\s*\(\s*(?:Exception|Throwable)\s+\w+\s*\)\s*\{\s*\}",
        ),
    )
)
_RISKY_HINTS: dict[str, tuple[str, ...]] = {
    "eval": ("eval", "exec", "function"),
    "shell-injection": ("shell", "system", "popen", "runtime", "exec", "passthru",
                        "proc_open", "`", "command"),
    "sql-concatenation": ("select", "insert", "update", "delete"),
    "tls-verify-off": ("verify", "rejectunauthorized", "node_tls", "unverified", "cert_none",
                       "check_hostname", "curlopt_ssl", "danger_accept", "trustall",
                       "noophostname", "strict-ssl", "insecure"),
    "broad-except": ("except", "catch", "rescue"),
}  # fmt: skip
_SWALLOW_BODY = re.compile(r"^\s*(?:pass|\.\.\.|continue|return(?:\s+None)?|\}|nil)\s*$")

# Import names and manifest entries -> the framework names personas list.
FRAMEWORKS: dict[str, str] = {
    "django": "django", "flask": "flask", "fastapi": "fastapi", "sqlalchemy": "sqlalchemy",
    "alembic": "alembic", "pytest": "pytest", "hypothesis": "hypothesis", "celery": "celery",
    "arq": "arq", "asyncio": "asyncio", "trio": "trio", "pydantic": "pydantic",
    "rest_framework": "django-rest-framework", "djangorestframework": "django-rest-framework",
    "react": "react", "react-dom": "react", "next": "next.js", "vue": "vue",
    "@angular/core": "angular", "svelte": "svelte", "express": "express",
    "@nestjs/core": "nestjs", "jest": "jest", "vitest": "vitest",
    "@playwright/test": "playwright", "playwright": "playwright", "prisma": "prisma",
    "@prisma/client": "prisma", "tailwindcss": "tailwind", "vite": "vite",
    "org.springframework": "spring", "org.hibernate": "hibernate", "org.junit": "junit",
    "rails": "rails", "activerecord": "activerecord", "rspec": "rspec", "laravel": "laravel",
    "illuminate": "laravel", "github.com/gin-gonic/gin": "gin", "gorm.io/gorm": "gorm",
    "testing": "go-test", "tokio": "tokio", "graphql": "graphql", "grpc": "grpc",
    "grpcio": "grpc", "google.golang.org/grpc": "grpc", "@grpc/grpc-js": "grpc",
    "java.util.concurrent": "java-util-concurrent", "k8s.io/client-go": "kubernetes",
}  # fmt: skip
_ARTIFACT_FRAMEWORKS = {
    "workflow": "github-actions", "dockerfile": "docker", "compose": "docker-compose",
    "helm-chart": "helm", "terraform": "terraform", "kubernetes-manifest": "kubernetes",
}  # fmt: skip
_MANIFEST_FRAMEWORKS = {
    "package.json": "npm", "pyproject.toml": "pip", "cargo.toml": "cargo", "pom.xml": "maven",
    "poetry.lock": "poetry", "gemfile": "bundler", "go.mod": "go-modules",
}  # fmt: skip


@dataclass
class FileFacts:
    """What signals need of one changed file, without its lines: a diff far larger than
    anything sent keeps these per file, not the file. Only kinds, paths, line numbers and
    import names (matched against known frameworks) come from the lines; dependency
    changes are read from the manifest's redacted text (see `file_facts`)."""

    info: ChangedFile
    areas: set[str]
    risky: list[RiskyPattern]
    trojan: list[CodeLocation]
    dependencies: list[DependencyChange]
    imports: list[str] | None  # of the added lines (code files); None: read from the head
    # What the added lines do (bot/context/constructs.py), with the first line of each.
    evidence: list[ChangeEvidence] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.info.path


def file_facts(
    parsed: ParsedFile,
    dependencies: list[DependencyChange] | None = None,
    *,
    with_imports: bool = True,
) -> FileFacts:
    """`parsed` carries its classification; `dependencies`, when given, were read from the
    file's redacted diff (else from `parsed`, which then should be redacted)."""
    if dependencies is None:
        dependencies = dependency_changes(parsed.path, parsed.hunks)
    code = is_code(parsed.info)
    imports = None
    if code and with_imports:
        imports = imports_of("\n".join(t for _, t in parsed.added_lines), parsed.info.language)
    evidence = []
    if code and not parsed.info.is_test:
        evidence = line_evidence(parsed.path, parsed.info.language, parsed.added_lines)
    areas = file_areas(parsed, evidence)  # what the added lines do, not the lines around
    if code and not parsed.info.is_test and not any(e.concept == "security" for e in evidence):
        beside = around_evidence(parsed.path, around_lines(parsed))
        evidence += [beside] if beside is not None else []
    return FileFacts(
        info=parsed.info,
        areas=areas,
        risky=risky_patterns(parsed) if code else [],
        trojan=trojan_source([parsed]),
        dependencies=dependencies,
        imports=imports,
        evidence=evidence,
    )


def compute_signals(
    files: Sequence[FileFacts],
    heads: Mapping[str, str],
    meta: PullRequestMeta | None = None,
) -> Signals:
    """`files` carry their classification (language, test, exclusion); `heads` are the
    changed files' texts at head, where they were read; `meta`, the PR's own words, gives
    the intent (bot/context/intent.py)."""
    weights: Counter[str] = Counter()
    artifacts: set[str] = set()
    paths: dict[str, str] = {}
    for facts in files:
        info = facts.info
        size = max(1, info.added + info.deleted)
        for area in facts.areas:
            weights[area] += size * AREA_WEIGHT.get(area, 1)
        kinds = file_kinds(facts, heads)
        artifacts |= kinds
        for kind in sorted(kinds):
            paths.setdefault(kind, info.path)
    dependencies = [d for f in files for d in f.dependencies]
    risky = [r for f in files for r in f.risky]
    infos = [f.info for f in files]
    manifests = [f for f in infos if is_manifest(f.path)]
    weights["dependencies"] += sum(max(1, f.added + f.deleted) for f in manifests)
    weights["security"] += 10 * sum(1 for r in risky if r.kind != "broad-except")
    _whole_change_areas(infos, weights)
    return Signals(
        languages=sorted({f.language for f in infos if f.language}),
        frameworks=_frameworks(files, heads, artifacts, dependencies),
        areas=sorted(a for a, w in weights.items() if w > 0 and a in AREA_ORDER),
        artifact_types=sorted(artifacts),
        dominant_area=_dominant(weights),
        files_changed=len(infos),
        lines_added=sum(f.added for f in infos),
        lines_deleted=sum(f.deleted for f in infos),
        directories=sorted({str(PurePosixPath(f.path).parent) for f in infos}),
        source_without_tests=_source_without_tests(infos),
        dependencies=dependencies,
        risky_patterns=risky,
        trojan_source=[loc for f in files for loc in f.trojan],
        non_utf8_files=[f.path for f in infos if f.non_utf8],
        binary_files=[f.path for f in infos if f.binary],
        intent=intent_words(meta) if meta is not None else [],
        evidence=[e for f in files for e in f.evidence if e.concept != QUERY_HINT][:MAX_EVIDENCE],
        artifact_paths=paths,
    )


def file_kinds(facts: FileFacts, heads: Mapping[str, str]) -> set[str]:
    """The file's artifact kinds by path (bot/context/classify.py), with the two read from
    its code: "database-query" (database lines added, or a database library imported and a
    query-builder call added) and "orm-model" kept only for such a file (a `models/`
    directory of machine-learning code is not a schema). A test is neither."""
    info = facts.info
    kinds = artifact_types(info.path, info.language, info.is_test)
    if info.is_test:
        return kinds - {"orm-model", "migration"}
    concepts = {e.concept for e in facts.evidence}
    database = "database" in concepts or (
        QUERY_HINT in concepts and _imports_database(facts, heads)
    )
    if database:
        kinds.add("database-query")
    elif "orm-model" in kinds and not (is_code(info) and _imports_database(facts, heads)):
        kinds.discard("orm-model")
    return kinds


def _imports_database(facts: FileFacts, heads: Mapping[str, str]) -> bool:
    return any(
        key in DATABASE_IMPORTS for name in _file_imports(facts, heads) for key in _prefixes(name)
    )


def _file_imports(facts: FileFacts, heads: Mapping[str, str]) -> list[str]:
    """The file's imports: of its head where it was read, else of its added lines."""
    head = heads.get(facts.path)
    return imports_of(head, facts.info.language) if head else facts.imports or []


def around_lines(parsed: ParsedFile) -> list[tuple[int, str, str]]:
    """A file's context and removed lines, each with the head line it sits at."""
    found = []
    for hunk in parsed.hunks:
        number = hunk.target_start
        for line in hunk.lines:
            kind, text = line[:1], line[1:]
            if kind == "+":
                number += 1
            elif kind == "-":
                found.append((number, "removed", text))
            elif kind == " ":
                found.append((number, "context", text))
                number += 1
    return found


def file_areas(parsed: ParsedFile, evidence: Sequence[ChangeEvidence] = ()) -> set[str]:
    """The areas a file touches: by its path, and by what its added lines do (`evidence`,
    bot/context/constructs.py)."""
    areas = {area for area, rx in _AREA_PATHS.items() if rx.search(parsed.path)}
    areas |= {e.concept for e in evidence if e.concept in AREA_ORDER}
    if parsed.info.is_test:
        areas.discard("security")  # a test named test_auth.py is not itself a risk
    return areas


def _whole_change_areas(files: list[ChangedFile], weights: Counter[str]) -> None:
    """docs-only and tests-only describe the change as a whole, and then they dominate."""
    if files and all(_is_doc(f.path) for f in files):
        weights.clear()
        weights["docs-only"] = 1
    elif files and all(f.is_test for f in files):
        weights.clear()
        weights["tests-only"] = 1


def _dominant(weights: Counter[str]) -> str | None:
    ranked = [a for a in AREA_ORDER if weights.get(a, 0) > 0]
    return max(ranked, key=lambda a: (weights[a], -AREA_ORDER.index(a))) if ranked else None


def _is_doc(path: str) -> bool:
    p = PurePosixPath(path)
    if is_manifest(path):
        return False
    return (
        p.suffix.lower() in _DOC_SUFFIXES
        or bool(_DOC_NAMES.match(p.name))
        or path.startswith(("docs/", "doc/"))
    )


def is_code(info: ChangedFile) -> bool:
    return info.language in CODE_LANGUAGES and info.excluded is None


def _source_without_tests(files: list[ChangedFile]) -> bool:
    source = any(is_code(f) and not f.is_test and f.change != "deleted" for f in files)
    return source and not any(f.is_test for f in files)


def risky_patterns(parsed: ParsedFile) -> list[RiskyPattern]:
    found: list[RiskyPattern] = []
    lines = parsed.added_lines
    added = "\n".join(text for _, text in lines).lower()
    # Only the patterns whose hints occur in the file are tried line by line.
    kinds = [(k, rx) for k, rx in _RISKY if any(h in added for h in _RISKY_HINTS[k])]
    for i, (number, text) in enumerate(lines):
        for kind, rx in kinds:
            if rx.search(text) or (kind == "broad-except" and _swallows(text, lines, i)):
                found.append(RiskyPattern(kind=kind, path=parsed.path, line=number))
    return found


def _swallows(text: str, lines: list[tuple[int, str]], i: int) -> bool:
    """`except Exception:` / `catch (e) {` whose next added line does nothing."""
    opener = re.search(r"^\s*except\s+(?:Base)?Exception\b[^:]*:\s*$|\bcatch\b[^{]*\{\s*$", text)
    if opener is None or i + 1 >= len(lines):
        return False
    number, following = lines[i + 1]
    return number == lines[i][0] + 1 and bool(_SWALLOW_BODY.match(following))


def trojan_source(files: Iterable[ParsedFile]) -> list[CodeLocation]:
    return [
        CodeLocation(path=f.path, line=number)
        for f in files
        for number, text in f.added_lines
        if has_bidi(text)
    ]


def _frameworks(
    files: Sequence[FileFacts],
    heads: Mapping[str, str],
    artifacts: set[str],
    dependencies: list[DependencyChange],
) -> list[str]:
    found = {_ARTIFACT_FRAMEWORKS[a] for a in artifacts if a in _ARTIFACT_FRAMEWORKS}
    for dep in dependencies:
        found |= _known(dep.name)
    for facts in files:
        name = PurePosixPath(facts.path).name.lower()
        if name in _MANIFEST_FRAMEWORKS:
            found.add(_MANIFEST_FRAMEWORKS[name])
        if not is_code(facts.info):
            continue
        for name in _file_imports(facts, heads):
            found |= _known(name)
    return sorted(found)


def _known(name: str) -> set[str]:
    """The framework an import or package name belongs to (`django.db` -> django)."""
    name = name.lower()
    for key in _prefixes(name):
        if key in FRAMEWORKS:
            return {FRAMEWORKS[key]}
    return set()


def _prefixes(name: str) -> list[str]:
    for sep in (".", "/", "\\", "::"):
        if sep in name:
            parts = name.split(sep)
            return [sep.join(parts[:i]) for i in range(len(parts), 0, -1)]
    return [name]

"""What a path is: its language, whether it is a test, generated, vendored, a lock file,
ignored by the repo's globs, and which artifact types it counts as."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import PurePosixPath

from bot.context.models import Exclusion
from bot.context.paths import name as path_name
from bot.context.paths import stem as path_stem
from bot.context.paths import suffix as path_suffix

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".jsx": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".mts": "typescript", ".cts": "typescript", ".go": "go", ".java": "java", ".rs": "rust",
    ".rb": "ruby", ".rake": "ruby", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".cs": "csharp", ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".scala": "scala", ".sql": "sql",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".tf": "hcl", ".hcl": "hcl",
    ".yml": "yaml", ".yaml": "yaml", ".md": "markdown", ".rst": "restructuredtext",
    ".css": "css", ".scss": "css", ".html": "html", ".vue": "vue", ".svelte": "svelte",
    ".lua": "lua", ".pl": "perl", ".r": "r", ".dart": "dart", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hs": "haskell", ".clj": "clojure", ".m": "objective-c",
}  # fmt: skip
_FILENAMES = {"dockerfile": "dockerfile", "makefile": "make", "rakefile": "ruby", "gemfile": "ruby"}
_SHEBANG = re.compile(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?([A-Za-z]+)")
_INTERPRETERS = {
    "python": "python", "python3": "python", "node": "javascript", "deno": "typescript",
    "bash": "shell", "sh": "shell", "zsh": "shell", "ruby": "ruby", "php": "php", "perl": "perl",
}  # fmt: skip
# Languages of code (as opposed to markup, config and prose): "source changed" means these.
CODE_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "go", "java", "rust", "ruby", "c", "cpp", "csharp",
     "php", "kotlin", "swift", "scala", "shell", "lua", "perl", "dart", "elixir", "erlang",
     "haskell", "clojure", "objective-c", "vue", "svelte", "sql", "r"}
)  # fmt: skip

LOCK_FILES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
     "pipfile.lock", "cargo.lock", "go.sum", "gemfile.lock", "composer.lock", "uv.lock",
     "pdm.lock", "bun.lockb", "mix.lock", "podfile.lock", "packages.lock.json", "flake.lock"}
)  # fmt: skip
_VENDORED = re.compile(
    r"(?:^|/)(?:vendor|vendors|node_modules|third_party|third-party|bower_components)/"
)
_GENERATED_PATH = re.compile(
    r"(?:\.min\.(?:js|css)|\.pb\.go|_pb2(?:_grpc)?\.pyi?|\.pb\.(?:cc|h)|\.generated\.\w+"
    r"|\.g\.dart|\.designer\.cs|\.snap|\.map)$|(?:^|/)(?:__generated__|generated|dist)/"
)
_GENERATED_MARK = re.compile(
    r"@generated|code generated .{0,80}do not edit|auto-?generated|do not edit.{0,20}generated",
    re.IGNORECASE,
)
# A Git LFS pointer: the file's content lives outside the repository.
_LFS_POINTER = re.compile(
    r"^(?:version https://git-lfs\.github\.com/spec/v1|oid sha256:[0-9a-f]{64})$", re.MULTILINE
)
MINIFIED_LINE = 1_000  # characters: a line this long is a bundle's, not a person's
_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|spec|specs|testing|test_data|testdata)/")
_TEST_NAME = re.compile(
    r"(?:^test_.+|.+_test|.+\.(?:test|spec)|.+_spec|.+Tests?|Test[A-Z].*|conftest)$"
)
MANIFESTS = frozenset(
    {"pyproject.toml", "setup.py", "setup.cfg", "package.json", "go.mod", "cargo.toml",
     "pom.xml", "gemfile", "build.gradle", "build.gradle.kts", "composer.json", "pipfile",
     "environment.yml"}
)  # fmt: skip
_REQUIREMENTS = re.compile(r"(?:^|/)(?:requirements[^/]*\.(?:txt|in)|constraints[^/]*\.txt)$")


def language_of(path: str, first_line: str = "") -> str | None:
    """By extension, then well-known file names, then the shebang line."""
    found = LANGUAGES.get(path_suffix(path).lower()) or _FILENAMES.get(path_name(path).lower())
    if found or not first_line.startswith("#!"):
        return found
    match = _SHEBANG.match(first_line)
    return _INTERPRETERS.get(match.group(1).rstrip("0123456789.")) if match else None


def is_test_path(path: str) -> bool:
    return bool(_TEST_DIR.search(path)) or bool(_TEST_NAME.match(path_stem(path)))


def is_requirements(path: str) -> bool:
    return bool(_REQUIREMENTS.search(path.lower()))


def is_manifest(path: str) -> bool:
    return path_name(path).lower() in MANIFESTS or is_requirements(path)


def exclusion(path: str, head: str, ignore: Sequence[str]) -> Exclusion | None:
    """Why this changed file is listed and not sent; `head` is the start of its new text."""
    name = path_name(path).lower()
    if any(glob_match(g, path) for g in ignore):
        return "ignored"
    if name in LOCK_FILES:
        return "lock"
    if _VENDORED.search(path):
        return "vendored"
    if _GENERATED_PATH.search(path) or _GENERATED_MARK.search(head[:2000]):
        return "generated"
    if _LFS_POINTER.search(head[:400]) and head.count("\n") < 3:
        return "lfs"
    if any(len(line) > MINIFIED_LINE for line in head[:20_000].split("\n")):
        return "minified"
    return None


def glob_match(pattern: str, path: str) -> bool:
    """gitignore-flavoured globs: `*` within a segment, `**` across them; a pattern without
    `/` matches the file name anywhere; a trailing `/` means everything below."""
    return _glob_regex(pattern.strip()).search(path) is not None


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("/"):
        pattern += "**"
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.lstrip("/")
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out)
    return re.compile(f"^{body}$" if anchored else f"(?:^|/){body}$")


_ARTIFACTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx, re.IGNORECASE))
    for kind, rx in (
        ("migration", r"(?:^|/)(?:migrations?|alembic/versions|db/migrate|db/migration)/"
         r"|(?:^|/)V\d+(?:[._]\d+)*__[^/]+\.sql$"),
        ("sql", r"\.sql$"),
        ("schema", r"\.(?:prisma|dbml)$|(?:^|/)(?:schema\.rb|structure\.sql|schema\.sql)$"),
        # A path named like a model module; kept only when the file is database code
        # (bot/context/signals.py: an ORM import or database lines), so a machine-learning
        # `models/` directory is not a schema.
        ("orm-model", r"(?:^|/)(?:\w+_)?models?\.(?:py|rb|ts|js)$|(?:^|/)(?:models?|entities?)/"
         r"|entity\.(?:java|kt|cs)$"),
        ("dockerfile", r"(?:^|/)dockerfile[^/]*$|\.dockerfile$|(?:^|/)containerfile$"),
        ("container", r"(?:^|/)(?:docker|containers?|\.devcontainer)/|(?:^|/)\.dockerignore$"
         r"|(?:^|/)(?:docker-)?entrypoint[^/]*\.sh$"),
        ("compose", r"(?:^|/)(?:docker-)?compose[^/]*\.ya?ml$"),
        ("kubernetes-manifest", r"(?:^|/)(?:k8s|kubernetes|manifests)/.*\.ya?ml$"
         r"|(?:^|/)(?:kustomization|skaffold)\.ya?ml$"),
        ("helm-chart", r"(?:^|/)(?:charts?/|chart\.yaml$|values[^/]*\.yaml$)"),
        ("terraform", r"\.(?:tf|tfvars|hcl)$"),
        ("deploy-manifest", r"(?:^|/)(?:deploy|deployments?|infra|ansible|systemd)/"
         r"|(?:^|/)(?:procfile|fly\.toml|vercel\.json|netlify\.toml|render\.ya?ml"
         r"|serverless\.ya?ml)$|\.service$"),
        ("workflow", r"(?:^|/)\.github/(?:workflows|actions)/|\.gitlab-ci\.yml$|jenkinsfile$"
         r"|\.circleci/|(?:^|/)azure-pipelines\.ya?ml$|(?:^|/)\.travis\.yml$|\.buildkite/"
         r"|(?:^|/)bitbucket-pipelines\.yml$|(?:^|/)\.drone\.ya?ml$|(?:^|/)cloudbuild\.ya?ml$"),
        ("build", r"(?:^|/)(?:g?makefile|cmakelists\.txt|meson\.build|justfile)$"
         r"|\.(?:mk|cmake)$|(?:^|/)\.goreleaser\.ya?ml$"),
        ("openapi", r"(?:openapi|swagger)[^/]*\.(?:ya?ml|json)$"),
        ("protobuf", r"\.proto$"),
        ("graphql-schema", r"\.(?:graphql|gql)$"),
        ("json-schema", r"\.schema\.json$"),
        ("lockfile", r"(?:\.lock|lock\.json|lock\.yaml|(?:^|/)go\.sum)$"),
        ("changelog", r"(?:^|/)(?:changelog|changes|history|news|releases?)"
         r"(?:\.(?:md|rst|txt|adoc))?$"),
        ("readme", r"(?:^|/)readme(?:\.[a-z]+)?$"),
        ("adr", r"(?:^|/)docs?/(?:adr|decisions)/"),
        ("architecture-doc", r"(?:^|/)architecture[^/]*\.(?:md|rst)$"),
        ("markdown", r"\.(?:md|mdx|rst|adoc)$"),
        ("docs", r"(?:^|/)(?:docs?|documentation)/|(?:^|/)(?:mkdocs\.ya?ml|\.readthedocs\.ya?ml)$"),
        ("benchmark", r"(?:^|/)(?:bench|benchmarks?)/|_bench(?:mark)?\.\w+$"),
        ("fixture", r"(?:^|/)(?:fixtures?|testdata)/"),
        ("snapshot", r"\.snap$|__snapshots__/"),
        ("type-stubs", r"\.pyi$|\.d\.ts$"),
        # Frontend files: components (markup in code), stylesheets, markup templates, and
        # script under a directory that holds a web front end.
        ("component", r"\.(?:jsx|tsx|vue|svelte|astro)$"
         r"|(?:^|/)components?/(?:[^/]+/)*[^/]+\.(?:js|mjs|ts)$"),
        ("stylesheet", r"\.(?:css|scss|sass|less|styl)$"),
        ("template", r"\.(?:html?|jinja2?|erb|hbs|handlebars|ejs|njk|twig|liquid|mustache)$"),
        ("frontend-script", r"(?:^|/)(?:web|webview-ui|frontend|client|www|static|public|pages)/"
         r"(?:[^/]+/)*[^/]+\.(?:js|mjs|cjs|jsx|ts|tsx)$"),
        ("alerting-rules", r"(?:alert|rules)[^/]*\.ya?ml$"),
        ("dashboard", r"dashboards?/.*\.json$"),
        ("feature-flag-config", r"(?:feature[-_]?flags?|flags)[^/]*\.(?:ya?ml|json|toml)$"),
        ("config", r"\.(?:ya?ml|toml|ini|cfg|conf|env)$|(?:^|/)\.[^/]+rc$"),
    )
)  # fmt: skip
# Kinds read from a file's lines, not its path (bot/context/signals.py): code that talks to
# a database.
LINE_KINDS = ("database-query",)
# Every kind `artifact_types` and the signals can name a changed file: what a persona's
# `requires_files` may list (bot/council/evidence.py keeps its own copy; a test holds the two
# together).
ARTIFACT_KINDS = frozenset(
    {kind for kind, _ in _ARTIFACTS}
    | {"package-manifest", "requirements", "lockfile", "test", "source", *LINE_KINDS}
)


# Kinds a directory name gives: not to a code file in it (`infra/Store.java` is code), but
# to a shell script (`deploy/install.sh`), a manifest or a config file.
_DIRECTORY_KINDS = frozenset({"container", "deploy-manifest"})


def artifact_types(path: str, language: str | None, is_test: bool) -> set[str]:
    found = {kind for kind, rx in _ARTIFACTS if rx.search(path)}
    if language in CODE_LANGUAGES and language != "shell":
        found -= _DIRECTORY_KINDS
    name = PurePosixPath(path).name.lower()
    if is_manifest(path):
        found.add("package-manifest")
    if is_requirements(path):
        found.add("requirements")
    if name in LOCK_FILES:
        found.add("lockfile")
    if is_test:
        found.add("test")
    elif language in CODE_LANGUAGES:
        found.add("source")
    return found

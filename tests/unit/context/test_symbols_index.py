"""The name index behind context by symbol: its bounds (an ambiguous name, a symbol with
many callers, files it does not index), one read per file per analysis, the blob cache, and
`git grep` over a local repository standing in for the text pass."""

from __future__ import annotations

import hashlib
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bot.context.models import ReadFile
from bot.context.nameindex import FileFacts, MemoryFactsCache, NameIndex
from bot.context.symbolic import SymbolAnalysis
from bot.review.gitgrep import GitGrep
from bot.review.localrepo import LocalRepo


def counting_reader(files: dict[str, str], reads: Counter[str]) -> ReadFile:
    async def read(path: str) -> bytes | None:
        reads[path] += 1
        text = files.get(path)
        return None if text is None else text.encode()

    return read


def sha_of(files: dict[str, str]) -> dict[str, str]:
    return {
        p: hashlib.sha1(b"blob %d\0" % len(t.encode()) + t.encode()).hexdigest()
        for p, t in files.items()
    }


CORE = "def resolve_entities(kb_id):\n    return helper(kb_id)\n"


def repo_with_callers(callers: int) -> dict[str, str]:
    repo = {"app/__init__.py": "", "app/core.py": CORE}
    for i in range(callers):
        repo[f"app/callers/c{i:02d}.py"] = (
            "from app.core import resolve_entities\n\n\n"
            f"def use_{i}():\n    return resolve_entities({i})\n"
        )
    return repo


async def test_a_name_defined_in_thirty_places_is_ambiguous_not_guessed() -> None:
    repo = repo_with_callers(0)
    for i in range(30):
        repo[f"lib/m{i:02d}.py"] = f"def helper(x):\n    return x + {i}\n"
    analysis = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
    )

    used = await analysis.resolve_used("app/core.py")

    assert used.used == ()
    [unresolved] = used.unresolved
    assert (unresolved.name, unresolved.reason, unresolved.count, unresolved.lines) == (
        "helper",
        "ambiguous",
        30,
        (2,),
    )
    assert unresolved.why == "defined in 30 places"


async def test_a_changed_symbol_whose_name_is_everywhere_is_not_followed() -> None:
    text = "class Store:\n    def get(self, key):\n        return key\n"
    repo = {"app/store.py": text}
    for i in range(30):
        repo[f"lib/c{i:02d}.py"] = f"class C{i}:\n    def get(self):\n        return {i}\n"
        repo[f"app/use{i:02d}.py"] = f"def use(x):\n    return x.get({i})\n"
    found = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"app/store.py": text},
        {"app/store.py": [(3, 3)]},
    )
    [refs] = await found.references(found.changed_symbols("app/store.py"))
    assert (refs.name, refs.files) == ("get", ())
    assert refs.skipped == "`get` is defined in more than 20 places"


async def test_a_symbol_referenced_in_fifty_files_keeps_ten_and_says_fifty() -> None:
    repo = repo_with_callers(50)
    repo["lib/helpers.py"] = "def helper(x):\n    return x\n"
    analysis = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
    )

    [symbol] = analysis.changed_symbols("app/core.py")
    [refs] = await analysis.references([symbol])

    assert len(refs.files) == 10 and refs.seen == 50 and refs.bounded
    assert [f.path for f in refs.files] == [f"app/callers/c{i:02d}.py" for i in range(10)]
    assert all(f.sites[-1].line == 5 and f.sites[-1].kind == "call" for f in refs.files)
    # and what it uses, resolved on the way: the one `helper` of the tree.
    used = await analysis.resolve_used("app/core.py")
    assert [(u.name, u.via, u.definitions[0].path) for u in used.used] == [
        ("helper", "index", "lib/helpers.py")
    ]


async def test_the_text_pass_reads_each_file_once_and_never_the_changed_ones() -> None:
    repo = repo_with_callers(12)
    repo["lib/helpers.py"] = "def helper(x):\n    return x\n"
    repo["README.md"] = "resolve_entities resolves.\n"
    repo["notes/other.txt"] = "nothing to see\n"
    reads: Counter[str] = Counter()
    analysis = SymbolAnalysis(
        sorted(repo), counting_reader(repo, reads), {"app/core.py": CORE}, {"app/core.py": [(2, 2)]}
    )

    changed = analysis.changed_symbols("app/core.py")
    await analysis.resolve_used("app/core.py")
    await analysis.references(changed)

    assert "app/core.py" not in reads
    assert set(reads) == set(repo) - {"app/core.py"}
    assert set(reads.values()) == {1}
    assert analysis.stats.read == len(repo) - 1


async def test_a_second_analysis_of_the_tree_reads_only_what_it_shows() -> None:
    repo = repo_with_callers(30)
    repo["lib/helpers.py"] = "def helper(x):\n    return x\n"
    shas = sha_of(repo)
    cache = MemoryFactsCache()
    first_reads: Counter[str] = Counter()
    first = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, first_reads),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
        blob_sha=shas.get,
        cache=cache,
    )
    before = await first.resolve_used("app/core.py")
    before_refs = await first.references(first.changed_symbols("app/core.py"))

    again_reads: Counter[str] = Counter()
    again = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, again_reads),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
        blob_sha=shas.get,
        cache=cache,
    )
    after = await again.resolve_used("app/core.py")
    after_refs = await again.references(again.changed_symbols("app/core.py"))

    assert after == before and after_refs == before_refs
    assert len(first_reads) == len(repo) - 1
    # Only the ten referencing files shown are read again (their reference lines).
    assert set(again_reads) == {f.path for f in after_refs[0].files}
    assert again.stats.from_cache == len(repo)


async def test_files_the_index_does_not_read() -> None:
    big = "x = 1\n" * 100_000 + "resolve_entities(1)\n"
    repo = {
        "app/core.py": CORE,
        "app/big.py": big,  # over 512 KB
        "vendor/lib/uses.py": "from app.core import resolve_entities\nresolve_entities(2)\n",
        "app/gen.py": "# Code generated by protoc. DO NOT EDIT.\nresolve_entities(3)\n",
        "assets/logo.png": "resolve_entities",
        "app/blob.py": "resolve_entities\0(4)\n",
        "app/real.py": "from app.core import resolve_entities\nresolve_entities(5)\n",
    }
    reads: Counter[str] = Counter()
    analysis = SymbolAnalysis(
        sorted(repo), counting_reader(repo, reads), {"app/core.py": CORE}, {"app/core.py": [(1, 2)]}
    )
    [symbol] = analysis.changed_symbols("app/core.py")
    [refs] = await analysis.references([symbol])

    assert [f.path for f in refs.files] == ["app/real.py"] and refs.seen == 1
    assert "vendor/lib/uses.py" not in reads and "assets/logo.png" not in reads


async def test_the_index_looks_up_definitions_only_in_files_that_may_hold_them() -> None:
    repo = {
        f"m{i}.py": f"import os\n\n\ndef f{i}():\n    return helper_{i % 3}()\n" for i in range(20)
    }
    repo["defs.py"] = "def helper_1():\n    return 1\n"
    index = NameIndex(sorted(repo), counting_reader(repo, Counter()))
    await index.scan(["helper_1", "nowhere"])

    found = await index.lookup("helper_1", family="python")

    assert [(d.path, d.name, d.start, d.end) for d in found.definitions] == [
        ("defs.py", "helper_1", 1, 2)
    ]
    assert found.files == 8  # m1, m4, ..., m19 and defs.py hold the word
    assert index.stats.parsed == 1  # only defs.py has a `def helper_1`
    assert index.files_with("nowhere") == []


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


async def test_git_grep_stands_in_for_the_text_pass(tmp_path: Path) -> None:
    repo = repo_with_callers(15)
    repo["lib/helpers.py"] = "def helper(x):\n    return x\n"
    repo["docs/api.md"] = "`resolve_entities` finds entities.\n"
    repo.update({f"other/o{i}.py": f"def other_{i}():\n    return {i}\n" for i in range(30)})
    for path, text in repo.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x")
    by_reading = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
    )
    expected = await by_reading.references(by_reading.changed_symbols("app/core.py"))

    async with LocalRepo(tmp_path) as local:
        analysis = SymbolAnalysis(
            local.files,
            local.read,
            {"app/core.py": CORE},
            {"app/core.py": [(2, 2)]},
            grep=GitGrep(tmp_path),
        )
        found = await analysis.references(analysis.changed_symbols("app/core.py"))
        used = await analysis.resolve_used("app/core.py")

    assert analysis.stats.grep
    assert found == expected and found[0].seen == 16
    assert [(u.name, u.definitions[0].path) for u in used.used] == [("helper", "lib/helpers.py")]
    # Read: the files that name what it uses or defines (not past the ten callers kept:
    # the documentation), not the rest of the tree.
    assert set(analysis.stats.reads) == {p for p in repo if p.startswith(("app/callers/", "lib/"))}


async def test_git_grep_outside_a_repository_falls_back_to_reading(tmp_path: Path) -> None:
    repo = repo_with_callers(3)
    analysis = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"app/core.py": CORE},
        {"app/core.py": [(2, 2)]},
        grep=GitGrep(tmp_path),
    )
    [refs] = await analysis.references(analysis.changed_symbols("app/core.py"))
    assert not analysis.stats.grep and refs.seen == 3


async def test_names_a_sample_shows_everywhere_are_not_grepped() -> None:
    """`grep` prints a line per match: `value`, in every file, is left out of it and is
    too common to look up; the rare name is grepped and found."""
    repo = {f"src/m{i:04d}.py": f"def f{i}(value):\n    return value\n" for i in range(1_000)}
    repo["src/m0500.py"] += "\n\ndef rare_helper():\n    return 1\n"
    asked: list[list[str]] = []

    async def grep(names: Sequence[str]) -> dict[str, set[str]] | None:
        asked.append(list(names))
        return {p: {n for n in names if n in t} for p, t in repo.items()}

    reads: Counter[str] = Counter()
    index = NameIndex(sorted(repo), counting_reader(repo, reads), grep=grep)
    await index.scan(["value", "rare_helper"])

    assert asked == [["rare_helper"]]
    assert index.files_with("rare_helper") == ["src/m0500.py"]
    common = await index.lookup("value", family="python")
    assert common.too_common and common.files == 1_000
    assert len(reads) == 400  # the sample


def test_the_memory_cache_lets_the_oldest_go_past_its_size() -> None:
    cache = MemoryFactsCache(max_bytes=1_000)
    for i in range(5):
        cache.set(f"blob{i}", FileFacts(words=b"x" * 300))
    assert len(cache) == 2 and cache.get("blob0") is None and cache.get("blob4") is not None


async def test_a_variable_typed_through_itself_is_not_followed_round() -> None:
    """`req := req.Clone(ctx)` states `req`'s type through `req`: resolving `req.Send` asks
    what `req` is, which asks what `req` is... (a RecursionError on ollama/ollama). The
    chain stops, and what can be resolved still is."""
    server = (
        "package server\n\n"
        "type Request struct{}\n\n"
        "func (r *Request) Send() error { return nil }\n\n"
        "func handle(req *Request) error {\n"
        "\treq := req.Clone(nil)\n"
        "\tdone := NewTracker()\n"
        "\treturn req.Send() // and done\n"
        "}\n"
    )
    tracker = "package server\n\nfunc NewTracker() int { return 0 }\n"
    repo = {"server/server.go": server, "server/tracker.go": tracker, "go.mod": "module x\n"}
    analysis = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"server/server.go": server},
        {"server/server.go": [(9, 11)]},
    )
    used = await analysis.resolve_used("server/server.go")
    names = {u.name for u in used.used}
    assert "NewTracker" in names  # the rest of the change is still resolved


async def test_a_package_attribute_follows_the_packages_re_export() -> None:
    """`import flask` then `flask.Flask` and `flask.send_file`: the package's
    `__init__.py` only re-exports them (`from .app import Flask as Flask`); the definitions
    are found where they are written (src layout)."""
    test = "import flask\n\n\ndef test_x(app: flask.Flask):\n    return flask.send_file('x')\n"
    repo = {
        "src/flask/__init__.py": (
            "from .app import Flask as Flask\nfrom .helpers import send_file as send_file\n"
        ),
        "src/flask/app.py": "class Flask:\n    def run(self):\n        return self\n",
        "src/flask/helpers.py": "def send_file(path):\n    return path\n",
        "tests/test_basic.py": test,
    }
    analysis = SymbolAnalysis(
        sorted(repo),
        counting_reader(repo, Counter()),
        {"tests/test_basic.py": test},
        {"tests/test_basic.py": [(4, 5)]},
    )
    used = await analysis.resolve_used("tests/test_basic.py")
    found = {u.name: [d.path for d in u.definitions] for u in used.used}
    assert found == {"Flask": ["src/flask/app.py"], "send_file": ["src/flask/helpers.py"]}

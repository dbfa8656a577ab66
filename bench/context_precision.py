"""Context precision: of what a reviewer of a real change needs, how much does the packed
context show, and how much of what it shows is about the change?

Changes: real commits of local clones (`--repos`, git directories; a work tree's `.git` is
found). Per repository, of its last `--window` (2,000) non-merge commits, those that change
3 to 300 lines of Python, Go, JS/TS or Java (vendored, minified, generated `.pb.go`/`_pb2.py`
and `.d.ts` files not counted; so a commit of docs or lock files only is never picked), and
of those `--per-repo` (12) evenly spaced from the newest: eligible commit number
floor((i + 1/2) * eligible / N), i = 0..N-1. When the baseline file lists a repository's
commits and the clone has them, those are measured again instead (`--fresh` picks anew): a
comparison with the baseline is over the same changes.

The context is built as `council review --base <parent>` builds it for HEAD = the commit
(bot/review/local.py `read_branch`, bot/review/sources.py `LocalSource`,
bot/review/localrepo.py `build_local_context`, bot/review/assemble.py `prepare_review`):
`git diff <parent> <commit>`, the commit message as title and description, the
repository's files read from git at the commit (never a work tree), its
`.github/council.yml` at the commit if any, the operator's default settings and models, the
default budget.

Shown lines: each section's own `lines` (the head-side runs the builder packed, the
`lines` of `council context --json`), through `bot.context.shown.shown_lines`: a diff
section's added and context lines, every numbered line of any other section. A diff's
removed lines (`  12 - text`, old-side numbers) are counted apart, from its text, as shown
diff lines. A directory listing (a path ending in "/") and the description show no file
lines. (The baseline recorded before sections carried their lines read them back from the
text, and missed the lines that followed a caption past the range it named.)

Ground truth and metrics: bench/precision_truth.py (its own tree-sitter analysis, in
bench/precision_syntax.py) and bench/precision_metrics.py. Beside the two recalls, the
same recalls over what lies outside the changed files ("outside": used definitions none of
whose candidates is in a changed file, referencing files the change does not touch): what
only related material can bring. Tokens: the builder's own estimate of the packed sections
(`BuiltContext.tokens`). Cost: the dry run's estimate (bot/review/plan.py `plan_review`,
no network) of a 5-seat board at the default models, for the changes under 50 lines.

Sets: TUNE (this repository, bluewave-labs/Checkmate, gofr-dev/gofr: the packing may be
tuned on them) and CHECK (every other repository, browser-use/browser-use and
wavetermdev/waveterm here): printed separately.

Run: `python bench/context_precision.py --repos /work/main /path/to/owner+name/repo ...`
(`--record FILE` writes the figures: repositories, commit SHAs, numbers, no code). A run
prints the recorded baseline (default bench/results/context_precision_baseline.json) beside
its own figures.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.precision_metrics import (
    definition_recall,
    median_and_mean,
    noise_share,
    reference_recall,
)
from bench.precision_syntax import EXTENSIONS
from bench.precision_truth import Blobs, Checkout, ground_truth
from bot.context import PullRequestMeta, Section, build_context
from bot.context.shown import shown_lines
from bot.council.personas import load_catalog
from bot.evaluate.dataset import Tree, has_commit
from bot.review.assemble import PreparedReview, ReviewOptions, prepare_review
from bot.review.local import LocalChange
from bot.review.plan import plan_review
from bot.review.setup import RepoSetup, remote_setup
from bot.review.sources import Gathered
from bot.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "bench" / "results" / "context_precision_baseline.json"
THIS_REPOSITORY = "pr-council"
TUNE = frozenset({THIS_REPOSITORY, "bluewave-labs/Checkmate", "gofr-dev/gofr"})
MIN_LINES, MAX_LINES = 3, 300
SMALL_CHANGE = 50  # lines: the changes whose board cost is estimated
BOARD_SEATS = 5
_NOT_COUNTED = re.compile(
    r"(^|/)(vendor|node_modules|dist|build|third_party)/|\.min\.js$|\.pb\.go$|_pb2\.py$"
    r"|\.d\.ts$"
)
METRICS = ("definition_recall", "reference_recall", "noise_share", "tokens")
BEYOND = ("definition_recall_beyond", "reference_recall_beyond")


def git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", "replace")


def git_dir_of(path: Path) -> Path:
    return path / ".git" if (path / ".git").exists() else path


def repo_name(git_dir: Path) -> str:
    """`owner/name` from a mirror's `owner+name` directory; this repository by name."""
    if git_dir.resolve() == (ROOT / ".git").resolve():
        return THIS_REPOSITORY
    for part in reversed(git_dir.resolve().parts):
        if "+" in part:
            owner, _, name = part.partition("+")
            return f"{owner}/{name}"
    return git_dir.resolve().parent.name if git_dir.name == ".git" else git_dir.name


# --- choosing the changes ---------------------------------------------------------------


def new_path(path: str) -> str:
    """The new side of a numstat path: `a/{old => new}/f` -> `a/new/f`, `x => y` -> `y`."""
    if "{" in path and " => " in path:
        path = re.sub(r"\{[^{}]* => ([^{}]*)\}", r"\1", path)
        return path.replace("//", "/")
    return path.split(" => ")[-1]


def counted(path: str) -> bool:
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path else ""
    return suffix in EXTENSIONS and _NOT_COUNTED.search(path) is None


def code_lines(numstat: Sequence[str]) -> int:
    """Lines added and deleted in counted code files, from `git log --numstat` lines."""
    total = 0
    for line in numstat:
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit() and counted(new_path(parts[2])):
            total += int(parts[0]) + int(parts[1])
    return total


def eligible(git_dir: Path, window: int) -> list[tuple[str, str, int]]:
    """(commit, parent, code lines) of the non-merge commits of the last `window` with a
    parent and 3-300 code lines changed, newest first."""
    out = git(git_dir, "log", "--no-merges", f"-n{window}", "--format=%x01%H %P", "--numstat")
    found = []
    for block in out.split("\x01")[1:]:
        head, *rest = block.strip("\n").split("\n")
        shas = head.split()
        if len(shas) != 2:
            continue  # the root commit
        lines = code_lines(rest)
        if MIN_LINES <= lines <= MAX_LINES:
            found.append((shas[0], shas[1], lines))
    return found


def evenly(items: Sequence[Any], count: int) -> list[Any]:
    if len(items) <= count:
        return list(items)
    return [items[int((i + 0.5) * len(items) / count)] for i in range(count)]


def commit_lines(git_dir: Path, commit: str) -> tuple[str, int]:
    out = git(git_dir, "log", "-1", "--format=%P", "--numstat", commit).strip("\n").split("\n")
    return out[0].split()[0], code_lines(out[1:])


# --- one change -------------------------------------------------------------------------


@dataclass
class CommitSource:
    """A commit of a clone reviewed as `council review --base <parent>` reviews HEAD: the
    same build (bot/review/localrepo.py `build_local_context`), files read at the commit."""

    git_dir: Path
    change: LocalChange

    @property
    def compared(self) -> str:
        return self.change.compared

    @property
    def head_sha(self) -> str | None:
        return self.change.head_sha

    async def gather(self, budget_tokens: int, ignore_globs: Sequence[str]) -> Gathered:
        assert self.change.head_sha is not None
        with Tree(self.git_dir, self.change.head_sha) as tree:
            built = await build_context(
                pr_meta(self.change),
                self.change.diff,
                tree.files,
                tree.read,
                budget_tokens=budget_tokens,
                ignore_globs=ignore_globs,
            )
        return Gathered(built)


def local_change(git_dir: Path, commit: str, parent: str) -> LocalChange:
    """What `read_branch` reads for HEAD = `commit` against its parent, with the commit
    subjects where the code under test's LocalChange carries them."""
    diff = git(git_dir, "diff", "--no-color", "--no-ext-diff", parent, commit)
    log = git(git_dir, "log", "--format=%s%n%n%b", f"{parent}..{commit}").strip()
    fields: dict[str, Any] = {
        "diff": diff,
        "title": log.splitlines()[0] if log else f"Changes since {parent}",
        "description": log,
        "head_sha": commit,
        "source": f"HEAD against {parent}",
        "base_label": parent[:7],
        "head_label": f"HEAD ({commit[:7]})",
    }
    if "subjects" in {f.name for f in dataclasses.fields(LocalChange)}:
        subjects = git(git_dir, "log", "--format=%s", f"{parent}..{commit}").splitlines()
        fields["subjects"] = tuple(s for s in subjects if s.strip())
    return LocalChange(**fields)


def pr_meta(change: LocalChange) -> PullRequestMeta:
    """The PR's words as a local review passes them (bot/review/localrepo.py)."""
    try:
        from bot.review.localrepo import change_meta  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # the code before commit subjects were passed (a baseline run)
        return PullRequestMeta(title=change.title, body=change.description)
    meta: PullRequestMeta = change_meta(change)
    return meta


async def setup_at(git_dir: Path, commit: str, settings: Settings) -> RepoSetup:
    """The repository's configuration as at the commit (its own personas are not read)."""
    try:
        text: str | None = git(git_dir, "show", f"{commit}:.github/council.yml")
    except subprocess.CalledProcessError:
        text = None

    async def no_agents() -> dict[str, str]:
        return {}

    return await remote_setup(text, no_agents, settings, load_catalog(), commit[:7])


def default_models(settings: Settings) -> list[str]:
    """The models a review runs on with every provider key set and nothing chosen
    (bot/providers/registry.py `configured_models`)."""
    if settings.models:
        return list(settings.models)
    return [
        f"anthropic:{settings.default_anthropic_model}",
        f"openai:{settings.default_openai_model}",
    ]


_REMOVED = re.compile(r"^ *\d+ -(?: |$)", re.M)  # `  12 - text`: a removed line's gutter


def removed_lines(sections: Sequence[Section]) -> int:
    """The removed lines the diff sections show (old-side numbers: no head line)."""
    return sum(len(_REMOVED.findall(s.text)) for s in sections if s.kind == "diff")


@dataclass
class Measured:
    repo: str
    commit: str
    lines: int
    definition_recall: float | None
    reference_recall: float | None
    noise_share: float | None
    tokens: int
    # The same recalls over what lies outside the changed files (what only related material
    # can bring: a definition all of whose candidates are elsewhere, a referencing file the
    # change does not touch).
    definition_recall_beyond: float | None
    reference_recall_beyond: float | None
    budget: int
    used_definitions: int
    referencing_files: int
    shown_lines: int
    cost_usd: float | None
    seconds: float


async def measure(
    git_dir: Path, repo: str, commit: str, parent: str, lines: int, blobs: Blobs
) -> Measured:
    started = time.perf_counter()
    settings = Settings()
    change = local_change(git_dir, commit, parent)
    prepared: PreparedReview = await prepare_review(
        CommitSource(git_dir, change),
        await setup_at(git_dir, commit, settings),
        settings,
        ReviewOptions(size=BOARD_SEATS),
        available=default_models(settings),
    )
    built = prepared.built
    seconds = time.perf_counter() - started  # the product's part; the ground truth is not
    shown = {p: ls for p, ls in shown_lines(built.sections).items() if not p.endswith("/")}
    removed = removed_lines(built.sections)
    truth = ground_truth(Checkout(blobs, commit), change.diff)
    touched = set(truth.diff_lines)
    beyond = [u for u in truth.used if all(d.path not in touched for d in u.candidates)]
    cost = None
    if lines < SMALL_CHANGE:
        cost = (await plan_review(prepared, settings)).estimate_cost_usd
    return Measured(
        repo=repo,
        commit=commit,
        lines=lines,
        definition_recall=definition_recall(truth.used, shown),
        reference_recall=reference_recall(truth.references, shown),
        noise_share=noise_share(shown, truth.needed(), removed),
        tokens=built.tokens,
        definition_recall_beyond=definition_recall(beyond, shown),
        reference_recall_beyond=reference_recall(
            [r for r in truth.references if r.path not in touched], shown
        ),
        budget=built.budget,
        used_definitions=len(truth.used),
        referencing_files=len(truth.references),
        shown_lines=sum(len(v) for v in shown.values()) + removed,
        cost_usd=cost,
        seconds=round(seconds, 2),
    )


# --- reporting --------------------------------------------------------------------------


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"changes": len(rows)}
    for metric in (*METRICS, *BEYOND, "cost_usd"):
        median, mean, n = median_and_mean([r.get(metric) for r in rows])
        out[metric] = {"median": _round(median), "mean": _round(mean), "n": n}
    return out


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def group_of(repo: str) -> str:
    return "TUNE" if repo in TUNE else "CHECK"


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, Any] = {}
    for group in ("TUNE", "CHECK"):
        members = [r for r in rows if group_of(r["repo"]) == group]
        if members:
            groups[group] = summarize(members)
    repos = {r["repo"]: summarize([x for x in rows if x["repo"] == r["repo"]]) for r in rows}
    return {"sets": groups, "repositories": repos}


def _fmt(cell: dict[str, Any] | None, metric: str, which: str) -> str:
    value = cell[metric][which] if cell and cell.get(metric) else None
    if value is None:
        return "-"
    if metric == "tokens":
        return f"{value:,.0f}"
    if metric == "cost_usd":
        return f"${value:.3f}"
    return f"{value:.0%}"


def _ordered(figures: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, key, label) of the rows: each set, then its repositories."""
    rows = []
    for group in figures["sets"]:
        note = "tuned on" if group == "TUNE" else "held out"
        rows.append(("sets", group, f"{group} set ({note})"))
        rows += [
            ("repositories", r, f"  {r}") for r in figures["repositories"] if group_of(r) == group
        ]
    return rows


def print_summary(figures: dict[str, Any], label: str) -> None:
    print(f"\n{label}: medians (means)")
    header = (
        f"{'set / repository':<34} {'changes':>7} {'def recall':>13} {'ref recall':>13} "
        f"{'noise':>13} {'tokens':>17} {'5 seats, <50 lines':>19}"
    )
    print(header)
    print("-" * len(header))
    for kind, key, name in _ordered(figures):
        cell = figures[kind][key]
        cols = [f"{_fmt(cell, m, 'median')} ({_fmt(cell, m, 'mean')})" for m in METRICS]
        cost = cell["cost_usd"]
        spent = f"{_fmt(cell, 'cost_usd', 'median')} n={cost['n']}" if cost["n"] else "-"
        print(
            f"{name:<34} {cell['changes']:>7} {cols[0]:>13} {cols[1]:>13} {cols[2]:>13} "
            f"{cols[3]:>17} {spent:>19}"
        )
    print(f"\n{label}, outside the changed files: medians (means) [changes counted]")
    print(f"{'set / repository':<34} {'def recall':>19} {'ref recall':>19}")
    for kind, key, name in _ordered(figures):
        cell = figures[kind][key]
        cols = [
            f"{_fmt(cell, m, 'median')} ({_fmt(cell, m, 'mean')}) [{cell[m]['n']}]" for m in BEYOND
        ]
        print(f"{name:<34} {cols[0]:>19} {cols[1]:>19}")


def print_comparison(baseline: dict[str, Any], now: dict[str, Any]) -> None:
    print(f"\nbaseline ({baseline.get('label', 'recorded')}) vs now: medians")
    names = ("def recall", "ref recall", "noise", "tokens", "def outside", "ref outside")
    print(f"{'set / repository':<34} " + " ".join(f"{n:>17}" for n in names))
    for kind, key, name in _ordered(now):
        before = baseline["summary"][kind].get(key)
        after = now[kind][key]
        cells = [
            f"{_fmt(before, m, 'median')} -> {_fmt(after, m, 'median')}"
            for m in (*METRICS, *BEYOND)
        ]
        print(f"{name:<34} " + " ".join(f"{c:>17}" for c in cells))


def builder_state() -> dict[str, Any]:
    """The commit of this repository the builder ran from, and its uncommitted changes."""
    head = git(ROOT / ".git", "rev-parse", "HEAD").strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "bot/context", "bot/review", "bot/council"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return {"commit": head, "uncommitted": [line[3:] for line in dirty.splitlines()]}


# --- the run ----------------------------------------------------------------------------


def plan(
    repos: Sequence[Path], per_repo: int, window: int, baseline: dict[str, Any] | None
) -> list[tuple[Path, str, str, str, int]]:
    """(git dir, repository, commit, parent, code lines) of every change to measure."""
    recorded: dict[str, list[str]] = {}
    for row in (baseline or {}).get("changes", []):
        recorded.setdefault(row["repo"], []).append(row["commit"])
    todo = []
    for path in repos:
        git_dir = git_dir_of(path)
        name = repo_name(git_dir)
        again = recorded.get(name, [])
        if again and all(has_commit(git_dir, c) for c in again):
            print(f"{name}: the baseline's {len(again)} commits", file=sys.stderr)
            for commit in again:
                parent, lines = commit_lines(git_dir, commit)
                todo.append((git_dir, name, commit, parent, lines))
            continue
        found = eligible(git_dir, window)
        chosen = evenly(found, per_repo)
        print(f"{name}: {len(chosen)} of {len(found)} eligible commits", file=sys.stderr)
        todo += [(git_dir, name, c, p, n) for c, p, n in chosen]
    return todo


async def run(todo: Sequence[tuple[Path, str, str, str, int]]) -> list[Measured]:
    results = []
    blobs: dict[Path, Blobs] = {}
    try:
        for n, (git_dir, name, commit, parent, lines) in enumerate(todo, 1):
            reader = blobs.setdefault(git_dir, Blobs(git_dir))
            measured = await measure(git_dir, name, commit, parent, lines, reader)
            results.append(measured)
            print(
                f"[{n}/{len(todo)}] {name} {commit[:8]} {lines} lines: "
                f"{measured.tokens:,} tokens, {measured.seconds:.1f} s",
                file=sys.stderr,
            )
    finally:
        for reader in blobs.values():
            reader.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, nargs="+", required=True, help="git directories")
    parser.add_argument("--per-repo", type=int, default=12, help="changes per repository")
    parser.add_argument("--window", type=int, default=2000, help="recent commits to pick from")
    parser.add_argument("--record", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="figures to compare")
    parser.add_argument("--fresh", action="store_true", help="pick commits anew")
    parser.add_argument("--label", default="turn-3 builder", help="what --record measured")
    args = parser.parse_args()
    baseline = json.loads(args.baseline.read_text()) if args.baseline.is_file() else None
    for path in args.repos:
        if not (git_dir_of(path) / "HEAD").is_file():
            parser.error(f"{path} is not a git directory")
    started = time.perf_counter()
    todo = plan(args.repos, args.per_repo, args.window, None if args.fresh else baseline)
    results = asyncio.run(run(todo))
    rows = [asdict(r) for r in results]
    figures = summary(rows)
    print_summary(figures, "now")
    if baseline is not None:
        print_comparison(baseline, figures)
    elapsed = time.perf_counter() - started
    print(f"\n{len(rows)} changes in {elapsed:.0f} s", file=sys.stderr)
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "label": args.label,
            "builder": builder_state(),
            "selection": {"per_repo": args.per_repo, "window": args.window},
            "summary": figures,
            "changes": rows,
        }
        args.record.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Seating: on real commits, does a seat sit whose kind of file the change lacks?

Changes: real commits of local git directories (`--repos`; a work tree's `.git` is found),
chosen as bench/context_precision.py chooses them: of the last `--window` non-merge
commits, those that change 3 to 300 lines of code, `--per-repo` of them evenly spaced from
the newest. `--commit DIR@SHA` adds a named commit (ragflow#6553, #6691: the cases of
issue 22) whatever its size.

Each change is seated as `council review --base <parent> --dry-run` seats HEAD = the commit
(bot/review/local.py `read_branch`, bot/review/localrepo.py, bot/review/assemble.py
`prepare_review`, bot/review/plan.py `plan_review`): the diff against the parent, the
commit message as title and description (and, where the code under test reads them, the
commit subjects), the repository's files read from git at the commit, the
default board (protocol board, 5 seats, min 3), no recorded outcomes, no model call.

What is counted, per seat, against this file's own reading of the changed paths (not the
product's, so a run before and a run after a change of the product are judged alike):
- lacking: a seat of a persona whose subject is a kind of file (`OWNED`: migrations,
  schema files and ORM models; frontend files; dependency manifests and lock files;
  pipelines, containers, deployment and build files; documentation files) on a change
  that has no such file. The goal is 0. (The database engineer is not counted: its subject
  is code that talks to a database, which a path does not show.)
- filler: a seat that scored below `FILLER_BAR` (an exact match of one concept scores
  4 + 3 = 7: below 5 is a seat no signal of the change asked for), the correctness owner
  aside (every board seats one, bot/council/scoring.py).
Printed per change, then per repository and set: seats, lacking, filler. `--record FILE`
writes the figures (repositories, SHAs, titles, boards; no code) as JSON; nothing is written
otherwise. `--compare FILE` seats a recorded run's commits again and prints its figures
beside this run's (`--repos` must name their git directories).

Run before and after a change of the seating on the same commits: the baseline from a
clean copy of the tree (`git archive HEAD | tar -x -C /tmp/base`, then
`python /tmp/base/bench/seating.py ...` with this file copied there: it runs the code of
the tree it sits in).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.context_precision import (
    CommitSource,
    default_models,
    eligible,
    evenly,
    git,
    git_dir_of,
    local_change,
    repo_name,
    setup_at,
)
from bot.review.assemble import ReviewOptions, prepare_review
from bot.review.plan import plan_review
from bot.settings import Settings

TUNE = frozenset({"infiniflow/ragflow"})
BOARD_SEATS, MIN_SEATS = 5, 3
FILLER_BAR = 5.0
CORRECTNESS_OWNER = "correctness-reviewer"

_MIGRATION = (
    r"(?:^|/)(?:migrations?|alembic|db/migrate|db/migration)/|\.sql$|\.prisma$"
    r"|(?:^|/)(?:schema\.rb|structure\.sql)$|(?:^|/)(?:\w+_)?models?\.(?:py|rb)$"
    r"|(?:^|/)models?/.*\.(?:py|rb)$|(?:^|/)entities?/|Entity\.(?:java|kt)$"
)
_FRONTEND = (
    r"\.(?:tsx|jsx|vue|svelte|astro|css|scss|sass|less|html?)$"
    r"|(?:^|/)(?:web|webview-ui|frontend|client|www|static|public|components?)/.*\.(?:js|ts|mjs)$"
)
_MANIFESTS = (
    r"(?:^|/)(?:package\.json|pyproject\.toml|setup\.py|setup\.cfg|go\.mod|go\.sum|cargo\.toml"
    r"|cargo\.lock|pom\.xml|build\.gradle(?:\.kts)?|gemfile(?:\.lock)?|composer\.(?:json|lock)"
    r"|pipfile(?:\.lock)?|requirements[^/]*\.(?:txt|in)|[^/]*lock\.(?:json|yaml)|[^/]*\.lock"
    r"|uv\.lock|poetry\.lock)$"
)
_PIPELINES = (
    r"(?:^|/)\.github/(?:workflows|actions)/|\.gitlab-ci\.yml$|(?:^|/)jenkinsfile$|\.circleci/"
    r"|azure-pipelines\.ya?ml$|\.travis\.yml$|\.buildkite/"
)
_CONTAINERS = (
    r"(?:^|/)[^/]*dockerfile[^/]*$|(?:^|/)containerfile$|(?:^|/)(?:docker-)?compose[^/]*\.ya?ml$"
    r"|(?:^|/)(?:docker|k8s|kubernetes|helm|charts?|deploy|deployment|terraform|infra)/"
    r"|\.(?:tf|tfvars)$|(?:^|/)\.dockerignore$"
)
_BUILD = r"(?:^|/)(?:makefile|cmakelists\.txt|justfile)$|\.(?:mk|cmake)$|\.goreleaser\.ya?ml$"
_DOCS = (
    r"\.(?:md|mdx|rst|adoc)$|(?:^|/)(?:docs?|documentation)/"
    r"|(?:^|/)(?:readme|changelog|changes|history|news)(?:\.[a-z]+)?$"
)
# persona -> (what it reviews, the paths that are it): the personas whose subject is a kind
# of file (issue 22, item 4), read from each persona's own description (agents/*.md).
OWNED: dict[str, tuple[str, re.Pattern[str]]] = {
    persona: (what, re.compile(rx, re.IGNORECASE))
    for persona, what, rx in (
        ("migration-safety", "migrations, schema files or ORM models", _MIGRATION),
        ("frontend-engineer", "frontend files", _FRONTEND),
        ("accessibility-reviewer", "frontend files", _FRONTEND),
        (
            "supply-chain-guardian",
            "dependency manifests, lock files, pipelines or containers",
            f"{_MANIFESTS}|{_PIPELINES}|{_CONTAINERS}",
        ),
        (
            "platform-engineer",
            "pipelines, containers, deployment or build files",
            f"{_PIPELINES}|{_CONTAINERS}|{_BUILD}",
        ),
        ("docs-reviewer", "documentation files", _DOCS),
    )
}
_CHANGED = re.compile(r"^diff --git a/.+? b/(.+)$", re.M)


def changed_paths(diff: str) -> list[str]:
    return _CHANGED.findall(diff)


def lacking(persona: str, paths: Sequence[str]) -> bool:
    """The persona owns a kind of file and no changed path is one."""
    owned = OWNED.get(persona)
    return owned is not None and not any(owned[1].search(p) for p in paths)


# --- one change -------------------------------------------------------------------------


@dataclass
class Seated:
    repo: str
    commit: str
    title: str
    paths: int
    board: list[tuple[str, float | None]]
    lacking: list[str]
    filler: list[str]
    why: str
    seconds: float


async def seat(git_dir: Path, repo: str, commit: str, parent: str) -> Seated:
    started = time.perf_counter()
    settings = Settings()
    change = local_change(git_dir, commit, parent)
    prepared = await prepare_review(
        CommitSource(git_dir, change),
        await setup_at(git_dir, commit, settings),
        settings,
        ReviewOptions(protocol="board", size=BOARD_SEATS),
        available=default_models(settings),
    )
    plan = await plan_review(prepared, settings)
    paths = changed_paths(change.diff)
    board = [(s.persona_id, s.score) for s in plan.seats]
    return Seated(
        repo=repo,
        commit=commit,
        title=change.title[:90],
        paths=len(paths),
        board=board,
        lacking=[p for p, _ in board if lacking(p, paths)],
        filler=[
            p
            for p, score in board
            if p != CORRECTNESS_OWNER and (score is None or score < FILLER_BAR)
        ],
        why=next((n for n in plan.notes if n.startswith("Why this board")), ""),
        seconds=round(time.perf_counter() - started, 2),
    )


# --- choosing and reporting -------------------------------------------------------------


def plan(
    repos: Sequence[Path],
    named: Sequence[str],
    per_repo: int,
    window: int,
    before: dict[str, Any] | None = None,
) -> list[tuple[Path, str, str, str]]:
    """(git dir, repository, commit, parent) of every change to seat: the named ones first;
    with a recorded run (`--compare`), its commits again, in its order."""
    todo: list[tuple[Path, str, str, str]] = []
    if before is not None:
        dirs = {repo_name(git_dir_of(p)): git_dir_of(p) for p in repos}
        for row in before["changes"]:
            git_dir = dirs[row["repo"]]
            parent = git(git_dir, "rev-parse", f"{row['commit']}^").strip()
            todo.append((git_dir, row["repo"], row["commit"], parent))
        return todo
    for item in named:
        where, _, sha = item.rpartition("@")
        git_dir = git_dir_of(Path(where))
        commit = git(git_dir, "rev-parse", f"{sha}^{{commit}}").strip()
        parent = git(git_dir, "rev-parse", f"{commit}^").strip()
        todo.append((git_dir, repo_name(git_dir), commit, parent))
    for path in repos:
        git_dir = git_dir_of(path)
        name = repo_name(git_dir)
        found = [(c, p) for c, p, _ in eligible(git_dir, window)]
        found = [(c, p) for c, p in found if not any(c == t[2] for t in todo)]
        chosen = evenly(found, per_repo)
        print(f"{name}: {len(chosen)} of {len(found)} eligible commits", file=sys.stderr)
        todo += [(git_dir, name, c, p) for c, p in chosen]
    return todo


def totals(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {
        "changes": len(rows),
        "seats": sum(len(r["board"]) for r in rows),
        "lacking": sum(len(r["lacking"]) for r in rows),
        "filler": sum(len(r["filler"]) for r in rows),
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    sets = {
        group: totals([r for r in rows if (r["repo"] in TUNE) == (group == "TUNE")])
        for group in ("TUNE", "CHECK")
    }
    repos = {r["repo"]: totals([x for x in rows if x["repo"] == r["repo"]]) for r in rows}
    return {"sets": sets, "repositories": repos}


def _cell(found: dict[str, int] | None, what: str) -> str:
    if not found:
        return "-"
    return f"{found[what]}/{found['seats']}"


def print_rows(rows: Sequence[dict[str, Any]]) -> None:
    for r in rows:
        board = ", ".join(f"{p} {s:g}" if s is not None else p for p, s in r["board"])
        print(f"{r['repo']} {r['commit'][:10]} {r['title'][:60]!r}")
        print(f"    board: {board}")
        if r["lacking"]:
            print(f"    LACKING its kind of file: {', '.join(r['lacking'])}")
        if r["filler"]:
            print(f"    filler (score < {FILLER_BAR:g}): {', '.join(r['filler'])}")


def print_who(rows: Sequence[dict[str, Any]], label: str) -> None:
    """Which personas the lacking and filler seats were."""
    for what in ("lacking", "filler"):
        counts: dict[str, int] = {}
        for r in rows:
            for persona in r[what]:
                counts[persona] = counts.get(persona, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        print(f"{label} {what}: {', '.join(f'{p} {n}' for p, n in ranked) or '-'}")


def print_summary(figures: dict[str, Any], before: dict[str, Any] | None) -> None:
    print("\nseats lacking their kind of file, and filler seats (count / seats)")
    head = f"{'set / repository':<32} {'changes':>7} {'lacking':>10} {'filler':>10}"
    if before is not None:
        head += f" {'lacking before':>15} {'filler before':>14}"
    print(head)
    print("-" * len(head))
    order = [("sets", g, f"{g} set") for g in figures["sets"]]
    order += [("repositories", r, f"  {r}") for r in sorted(figures["repositories"])]
    for kind, key, label in order:
        now = figures[kind][key]
        line = f"{label:<32} {now['changes']:>7} {_cell(now, 'lacking'):>10} "
        line += f"{_cell(now, 'filler'):>10}"
        if before is not None:
            then = before["summary"][kind].get(key)
            line += f" {_cell(then, 'lacking'):>15} {_cell(then, 'filler'):>14}"
        print(line)


async def run(todo: Sequence[tuple[Path, str, str, str]]) -> list[Seated]:
    results = []
    for n, (git_dir, name, commit, parent) in enumerate(todo, 1):
        found = await seat(git_dir, name, commit, parent)
        results.append(found)
        print(f"[{n}/{len(todo)}] {name} {commit[:8]} {found.seconds:.1f} s", file=sys.stderr)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repos", type=Path, nargs="*", default=[], help="git directories")
    parser.add_argument(
        "--commit", action="append", default=[], help="DIR@SHA: a named commit to seat too"
    )
    parser.add_argument("--per-repo", type=int, default=10, help="changes per repository")
    parser.add_argument("--window", type=int, default=400, help="recent commits to pick from")
    parser.add_argument("--record", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--compare", type=Path, help="a recorded run to print beside this one")
    parser.add_argument("--label", default="", help="what --record measured")
    args = parser.parse_args()
    for path in args.repos:
        if not (git_dir_of(path) / "HEAD").is_file():
            parser.error(f"{path} is not a git directory")
    before = json.loads(args.compare.read_text()) if args.compare else None
    started = time.perf_counter()
    todo = plan(args.repos, args.commit, args.per_repo, args.window, before)
    rows = [asdict(r) for r in asyncio.run(run(todo))]
    print_rows(rows)
    figures = summary(rows)
    print_summary(figures, before)
    print()
    print_who(rows, "now")
    if before is not None:
        print_who(before["changes"], "before")
    print(f"\n{len(rows)} changes in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        record = {"label": args.label, "summary": figures, "changes": rows}
        args.record.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()

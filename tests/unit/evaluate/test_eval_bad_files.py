"""`council eval` on a dataset file it cannot take: one line naming the file (and the line
when there is one), exit 2 as for every other usage error, never a traceback. The console
script as a user runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.cli.exits import EXIT_USAGE
from tests.support.cli import run_council

ENTRY = '{"url": "https://github.com/acme/widget/pull/7", "pr_title": "%s"}'


def run_eval(tmp_path: Path, dataset: Path) -> subprocess.CompletedProcess[str]:
    return run_council(None, tmp_path, "eval", str(dataset), "--repos", str(tmp_path))


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert done.stdout == ""
    return lines[0]


def test_a_dataset_that_is_not_utf8_names_the_file_and_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    text = "[\n  " + ENTRY % "Caf\u00e9 menu" + "\n]\n"
    bad.write_bytes(text.encode("latin-1"))
    line = one_error_line(run_eval(tmp_path, bad))
    assert str(bad) in line
    assert "line 2 is not UTF-8" in line and "0xe9" in line


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_a_dataset_nested_too_deeply_names_the_file_and_the_line(
    tmp_path: Path, depth: int
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[\n" + ENTRY % "ok" + ",\n" + "[" * depth + "]" * depth + "\n]\n")
    line = one_error_line(run_eval(tmp_path, deep))
    assert str(deep) in line
    assert f"nested {depth + 1:,} levels deep (at line 3)" in line
    assert "RecursionError" not in line and "maximum recursion" not in line


def test_a_dataset_with_a_number_too_large_to_read_is_a_usage_error(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text('[{"repo": "acme/widget", "number": 1e999}]')
    line = one_error_line(run_eval(tmp_path, big))
    assert str(big) in line and "pull request 1" in line


def test_json_that_does_not_parse_keeps_its_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[\n" + ENTRY % "ok" + ",\n}\n")
    line = one_error_line(run_eval(tmp_path, broken))
    assert str(broken) in line and "line 3" in line

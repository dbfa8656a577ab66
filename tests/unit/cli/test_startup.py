"""The command line starts fast: a command imports the heavy libraries only when it needs
them. Each case runs `council` in a fresh interpreter and reads back every module it
imported; what is asserted is what was imported, not a time (bench/startup.py measures
that)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from tests.support.diffs import AUTH_DIFF

COUNCIL = str(Path(sys.executable).with_name("council"))
# The model SDKs, the GitHub client, the database: each costs a noticeable part of a second.
HEAVY = frozenset({"anthropic", "openai", "githubkit", "sqlalchemy", "alembic"})
SONNET = "anthropic:claude-sonnet-5-5"
DIFF = AUTH_DIFF

# Runs the console script's command table with the given argv, then writes sorted(sys.modules)
# to the file named first, whatever the command's exit. (`app`, not the entry point `main`:
# `main` ends a review's process without unwinding, so nothing after it would run.)
RUNNER = """
import json, sys
out, *argv = sys.argv[1:]
sys.argv = ["council", *argv]
try:
    from bot.cli import app
    app()
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""

# The same for a snippet of Python instead of a command.
SNIPPET = """
import json, sys
out, code = sys.argv[1:]
try:
    exec(code)
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def environment(home: Path) -> dict[str, str]:
    """No provider key, no COUNCIL_* setting (so no COUNCIL_MODELS), no GitHub token, an
    Ollama URL that refuses at once, and state under the test's directory."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_", "GITHUB_"))
    }
    env.update(
        {
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"sqlite+aiosqlite:///{home / 'council.db'}",
            "XDG_STATE_HOME": str(home / "state"),
        }
    )
    return env


class Ran:
    def __init__(self, done: subprocess.CompletedProcess[str], modules: list[str]) -> None:
        self.code = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr
        self.modules = set(modules)

    @property
    def heavy(self) -> set[str]:
        """The heavy libraries it imported (their top-level packages)."""
        return {m.split(".")[0] for m in self.modules} & HEAVY


def _run(tmp_path: Path, script: str, *args: str) -> Ran:
    out = tmp_path / "modules.json"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), *args],
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    return Ran(done, json.loads(out.read_text()))


def council(tmp_path: Path, *argv: str) -> Ran:
    return _run(tmp_path, RUNNER, *argv)


def python(tmp_path: Path, code: str) -> Ran:
    return _run(tmp_path, SNIPPET, code)


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_text(DIFF)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["review", "--help"],
        ["agents", "--help"],
        ["context", "--help"],
        ["models", "check", "--help"],
        ["config", "check", "--help"],
        ["serve", "--help"],
        ["--version"],
    ],
    ids=" ".join,
)
def test_help_and_version_import_none_of_the_heavy_libraries(
    tmp_path: Path, argv: list[str]
) -> None:
    ran = council(tmp_path, *argv)
    assert ran.code == 0, ran.stderr
    assert ran.heavy == set()
    # Nor the council, the context builder or the settings' providers: only the commands,
    # and the protocol table (stdlib only) whose protocols and modes the help lists.
    table = {m for m in ran.modules if m == "bot.council" or m.startswith("bot.council.protocols")}
    assert not {m for m in ran.modules if m.startswith(("bot.council", "bot.context"))} - table
    assert "bot.cli.review" in ran.modules  # the list is the command's, not an empty one


def test_a_dry_run_without_a_provider_imports_none_of_them(tmp_path: Path, diff_file: Path) -> None:
    ran = council(tmp_path, "review", "--dry-run", "--diff", str(diff_file))
    assert ran.code == 0, ran.stderr
    assert "No model provider is available" in ran.stderr
    assert ran.heavy == set()
    assert "bot.council.engine" in ran.modules  # it did plan the board


def test_a_dry_run_with_an_anthropic_model_does_not_load_its_sdk(
    tmp_path: Path, diff_file: Path
) -> None:
    ran = council(tmp_path, "review", "--dry-run", "--diff", str(diff_file), "--models", SONNET)
    assert ran.code == 0, ran.stderr
    assert SONNET in ran.stdout
    assert ran.heavy == set()


def test_context_and_the_catalog_import_none_of_them(tmp_path: Path, diff_file: Path) -> None:
    for argv in (["context", "--diff", str(diff_file)], ["agents"]):
        ran = council(tmp_path, *argv)
        assert ran.code == 0, ran.stderr
        assert ran.heavy == set(), argv


def test_a_providers_sdk_loads_with_its_first_client(tmp_path: Path) -> None:
    """The registry resolves references and looks up capabilities without an SDK; building
    an adapter loads that family's SDK and only that one. (Also shows the check above sees
    an SDK when one is imported.)"""
    setup = (
        "import os\n"
        "os.environ['ANTHROPIC_API_KEY'] = 'sk-ant-test-0123456789'\n"
        "from bot.providers import ProviderRegistry\n"
        "from bot.settings import Settings\n"
        "registry = ProviderRegistry(Settings())\n"
        f"registry.resolve({SONNET!r})\n"
    )
    resolved = python(tmp_path, setup)
    assert resolved.code == 0, resolved.stderr
    assert resolved.heavy == set()
    built = python(tmp_path, setup + f"registry.get({SONNET!r})\n")
    assert built.code == 0, built.stderr
    assert built.heavy == {"anthropic"}


def test_version_prints_the_installed_distributions_version(tmp_path: Path) -> None:
    done = subprocess.run(
        [COUNCIL, "--version"],
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"council {version('pr-council')}\n"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["review"],
        ["agents"],
        ["context"],
        ["serve"],
        ["worker"],
        ["replay"],
        ["models"],
        ["models", "check"],
        ["config"],
        ["config", "check"],
    ],
    ids=lambda command: " ".join(["council", *command]),
)
def test_h_is_help_on_the_root_and_every_sub_command(command: list[str]) -> None:
    short, long = (CliRunner().invoke(app, [*command, flag]) for flag in ("-h", "--help"))
    assert short.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert f"Usage: council {' '.join(command)}".rstrip() in short.stdout

"""Running the `council` console script as a user does: a subprocess with a clean
environment pointed at the fake model server, in a directory of the test's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import FakeModelServer

COUNCIL = str(Path(sys.executable).with_name("council"))


def council_env(models: FakeModelServer | None, tmp_path: Path, **env: str) -> dict[str, str]:
    """No provider key, endpoint or council setting of the developer's leaks in."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_", "GITHUB_"))
    }
    base.update(
        {
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_CALL_DEADLINE_S": "10",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        }
    )
    if models is not None:
        base.update(
            {
                "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
                "ANTHROPIC_BASE_URL": models.anthropic_url,
                "OPENAI_API_KEY": "sk-test-0123456789",
                "OPENAI_BASE_URL": models.openai_url,
            }
        )
    base.update(env)
    return base


def run_council(
    models: FakeModelServer | None,
    cwd: Path,
    *args: str,
    stdin: str | None = None,
    env_dir: Path | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COUNCIL, *args],
        capture_output=True,
        text=True,
        env=council_env(models, env_dir or cwd, **env),
        timeout=120,
        input=stdin,
        cwd=cwd,
    )


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"},
    )
    return done.stdout


def make_repo(path: Path, files: dict[str, str], changed: dict[str, str]) -> Path:
    """A repository with `files` on main, then a branch `feature` that writes `changed`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    git(path, "checkout", "-q", "-b", "feature")
    for name, text in changed.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "Fix login")
    return path

"""Installable as `pipx install` installs it: one wheel, built once from a copy of the
repository (no network: the build backend installed in .venv, no isolation), carries the
personas, the migrations and alembic.ini, and the `council` command; and the files that
ship the Action and the image say what they must."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md", "constraints.txt"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "bot", source / "bot", symlinks=True, ignore=ignore)
    shutil.copytree(ROOT / "agents", source / "agents", ignore=ignore)
    out = work / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--disable-pip-version-check", "--quiet", "-w", str(out), str(source)]
    subprocess.run(
        command,
        check=True,
        timeout=120,
        cwd=work,
    )
    (built,) = out.glob("pr_council-*.whl")
    with zipfile.ZipFile(built) as archive:
        yield archive


def test_the_wheel_carries_the_personas_migrations_and_alembic_ini(
    wheel: zipfile.ZipFile,
) -> None:
    names = set(wheel.namelist())
    personas = {Path(n).name for n in names if n.startswith("bot/_agents/") and n.endswith(".md")}
    assert personas == {p.name for p in (ROOT / "agents").glob("*.md")}
    assert "correctness-reviewer.md" in personas
    assert "bot/store/alembic.ini" in names
    assert "bot/store/migrations/env.py" in names
    shipped = {n for n in names if re.fullmatch(r"bot/store/migrations/versions/[^/]+\.py", n)}
    expected = {
        f"bot/store/migrations/versions/{p.name}"
        for p in (ROOT / "bot/store/migrations/versions").glob("*.py")
    }
    assert shipped == expected and shipped
    assert "bot/action/run.py" in names and "bot/py.typed" in names


def test_the_wheel_installs_the_council_command(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert re.search(r"^council\s*=\s*bot\.cli:main$", text, re.MULTILINE), text


# --- the Action ------------------------------------------------------------------------------

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXAMPLE = yaml.safe_load((ROOT / "docs" / "council-workflow.yml").read_text())


def _on(workflow: dict[Any, Any]) -> Any:
    # YAML 1.1 reads a bare `on:` key as True.
    return workflow.get("on", workflow.get(True))


def test_the_action_installs_the_pinned_package_from_its_own_path_and_runs_it() -> None:
    runs = ACTION["runs"]
    assert runs["using"] == "composite"
    steps = runs["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    assert steps[0]["with"]["python-version"] == "3.11"
    script = "\n".join(step.get("run", "") for step in steps)
    assert re.search(r'-c "\$GITHUB_ACTION_PATH/constraints.txt" "\$GITHUB_ACTION_PATH"', script)
    assert 'council" action' in script or "council action" in script
    assert "checkout" not in yaml.safe_dump(ACTION)  # never the PR's code
    inputs = ACTION["inputs"]
    assert {"anthropic-api-key", "openai-api-key", "models", "github-token"} <= set(inputs)
    assert inputs["github-token"]["default"] == "${{ github.token }}"


def test_the_example_workflow_runs_on_the_reviewed_events_with_least_privilege() -> None:
    on = _on(EXAMPLE)
    assert isinstance(on, dict)
    assert on["pull_request"]["types"] == ["labeled", "synchronize", "ready_for_review"]
    assert on["issue_comment"]["types"] == ["created"]
    assert "pull_request_target" not in on
    assert EXAMPLE["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "checks": "write",
        "issues": "write",
    }
    (job,) = EXAMPLE["jobs"].values()
    group = job["concurrency"]["group"]
    assert group == "council-${{ github.event.pull_request.number || github.event.issue.number }}"
    assert job["concurrency"]["cancel-in-progress"]
    assert not any("checkout" in str(step.get("uses", "")) for step in job["steps"])
    assert "secrets.ANTHROPIC_API_KEY" in str(job["steps"])


def test_this_repository_does_not_run_the_example_on_itself() -> None:
    workflows = ROOT / ".github" / "workflows"
    assert not (workflows / "council-workflow.yml").exists()
    for path in workflows.glob("*.yml"):
        assert "OWNER/pr-council@" not in path.read_text(), path


# --- the image ------------------------------------------------------------------------------

RELEASE = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())


def test_the_release_workflow_pushes_the_image_on_version_tags() -> None:
    on = _on(RELEASE)
    assert isinstance(on, dict)
    assert on == {"push": {"tags": ["v*"]}}
    assert RELEASE["permissions"]["packages"] == "write"
    assert RELEASE["env"]["IMAGE_NAME"] == "ghcr.io/${{ github.repository_owner }}/pr-council"
    (job,) = RELEASE["jobs"].values()
    steps = {step.get("uses", "").split("@")[0]: step for step in job["steps"]}
    build = steps["docker/build-push-action"]["with"]
    assert build["push"] is True and build["file"] == "Dockerfile"
    assert steps["docker/metadata-action"]["with"]["images"] == "${{ env.IMAGE_NAME }}"
    assert steps["docker/login-action"]["with"]["registry"] == "ghcr.io"


def test_compose_takes_the_image_from_one_setting() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    images = {compose["services"][name]["image"] for name in ("web", "worker")}
    assert images == {"${COUNCIL_IMAGE:-pr-council:latest}"}


def test_kubernetes_takes_the_image_from_the_kustomization() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())
    (entry,) = kustomization["images"]
    assert entry["name"] == "pr-council" and entry["newName"].startswith("ghcr.io/")
    for manifest in ("web.yaml", "worker.yaml"):
        docs = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / manifest).read_text()) if d]
        images = {
            c["image"]
            for d in docs
            if d.get("kind") == "Deployment"
            for c in d["spec"]["template"]["spec"]["containers"]
        }
        assert images == {"pr-council"}, manifest  # the placeholder the entry replaces

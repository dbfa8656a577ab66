"""The deployment files, checked statically (no Docker engine here): the image is built the
way the package needs, every process runs a command the CLI has, every environment name is
a setting, probes hit routes the app serves, and the App manifest asks for exactly what
the App uses."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import typer.main
import yaml

from bot.cli import app as cli
from bot.settings import Settings
from bot.store.urls import async_url
from bot.web.app import WEBHOOK_PATH, create_app

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"

SERVE = ["council", "serve", "--host", "0.0.0.0", "--port", "8000"]
WORKER = ["council", "worker"]


def settings_env_names() -> set[str]:
    """Every environment variable Settings reads: its aliases, else COUNCIL_<FIELD>."""
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        if choices:
            names.update(str(c) for c in choices if str(c).isupper())
        else:
            names.add(f"COUNCIL_{name.upper()}")
    return names


ENV_NAMES = settings_env_names()


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def test_the_setting_names_are_the_documented_ones() -> None:
    # The helper itself must see aliased and prefixed names, or the checks below prove nothing.
    expected = {"GITHUB_APP_ID", "DATABASE_URL", "REDIS_URL", "COUNCIL_WORKER_METRICS_PORT"}
    assert expected <= ENV_NAMES
    assert "COUNCIL_REDIS_URL" not in ENV_NAMES


# --- the CLI and the app the deployment refers to --------------------------------------------


def cli_command(*path: str) -> Any:
    """The click command behind `council <path>` (typer 0.29 carries its own click)."""
    command: Any = typer.main.get_command(cli)
    for name in path:
        commands = getattr(command, "commands", {})
        assert name in commands, f"`council {' '.join(path)}` does not exist"
        command = commands[name]
    return command


def test_the_cli_has_the_commands_the_deployment_runs() -> None:
    serve = cli_command("serve")
    options = {opt for param in serve.params for opt in getattr(param, "opts", [])}
    assert {"--host", "--port"} <= options
    cli_command("worker")
    cli_command("config", "check")


def test_the_app_serves_the_probed_routes() -> None:
    app = create_app(Settings(github_webhook_secret="not-a-real-secret"))
    paths = {getattr(route, "path", None) for route in app.routes}
    assert {"/healthz", "/readyz", "/metrics", WEBHOOK_PATH} <= paths


# --- Dockerfile ----------------------------------------------------------------------------------


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", path.read_text())
    result: list[tuple[str, str]] = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


DOCKERFILE = instructions(ROOT / "Dockerfile")


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in DOCKERFILE:
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_the_image_is_multi_stage_on_python_3_11_slim() -> None:
    args = dict(arg.split("=", 1) for word, arg in DOCKERFILE if word == "ARG" and "=" in arg)
    bases = [rest.split()[0] for word, rest in DOCKERFILE if word == "FROM"]
    resolved = [re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base) for base in bases]
    assert len(resolved) >= 2
    assert resolved[-1] == "python:3.11-slim"
    runtime = stages()[-1]
    assert any(w == "COPY" and "--from=" in rest for w, rest in runtime), "runtime copies a build"
    assert not any(w == "RUN" and "pip install" in rest for w, rest in runtime)


def test_the_builder_copies_agents_and_bot_before_a_regular_install() -> None:
    builder = stages()[0]
    copies = [rest.split() for w, rest in builder if w == "COPY"]
    copied = [src.rstrip("/") for args in copies for src in args[:-1]]
    install = next(
        i
        for i, (w, rest) in enumerate(builder)
        if w == "RUN" and re.search(r"pip install .* \.(\s|$)", rest)
    )
    before = [
        src.rstrip("/") for w, rest in builder[:install] if w == "COPY" for src in rest.split()[:-1]
    ]
    assert {"agents", "bot", "pyproject.toml", "constraints.txt", "README.md"} <= set(before)
    assert set(copied) == set(before)
    command = builder[install][1]
    assert "-c constraints.txt" in command
    assert not re.search(r"(\s-e\s|--editable)", command), "the image needs a regular install"
    # What makes agents/ necessary: the catalog reaches the package through this symlink.
    link = ROOT / "bot" / "_agents"
    assert link.is_symlink() and Path(link.readlink()) == Path("../agents")


def test_the_runtime_user_is_not_root() -> None:
    users = [rest for w, rest in stages()[-1] if w == "USER"]
    assert users, "no USER in the runtime stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert user.isdigit(), "numeric, so Kubernetes runAsNonRoot can check it"


def test_the_web_is_the_default_command_with_a_healthcheck() -> None:
    healthchecks = [rest for w, rest in DOCKERFILE if w == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and "/healthz" in healthchecks[0]
    assert "127.0.0.1:8000" in healthchecks[0]
    cmd = [rest for w, rest in DOCKERFILE if w == "CMD"][-1]
    assert yaml.safe_load(cmd) == SERVE


def test_dockerignore_keeps_what_the_build_needs_and_drops_the_rest() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        return any(
            fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/") for p in patterns
        )

    for needed in ("pyproject.toml", "constraints.txt", "README.md", "agents/docs-reviewer.md"):
        assert not ignored(needed), needed
    assert not ignored("bot/config/__init__.py")
    for dropped in (
        ".git/config",
        ".venv/bin/python",
        "tests/test_config.py",
        "deploy/council.env",
    ):
        assert ignored(dropped), dropped


# --- docker compose --------------------------------------------------------------------------


COMPOSE = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def service(name: str) -> dict[str, Any]:
    found: dict[str, Any] = COMPOSE["services"][name]
    return found


def test_compose_runs_web_worker_redis_and_postgres() -> None:
    assert set(COMPOSE["services"]) == {"web", "worker", "redis", "postgres"}
    assert service("web")["command"] == SERVE
    assert service("worker")["command"] == WORKER
    for name in ("web", "worker"):
        assert service(name)["depends_on"] == {
            "redis": {"condition": "service_healthy"},
            "postgres": {"condition": "service_healthy"},
        }
        assert service(name)["env_file"][0]["path"] == "council.env"
    for name in COMPOSE["services"]:
        assert service(name)["healthcheck"]["test"], name
    assert "/healthz" in " ".join(service("web")["healthcheck"]["test"])


def test_compose_points_the_app_at_its_postgres_and_redis() -> None:
    for name in ("web", "worker"):
        env = service(name)["environment"]
        database = env["DATABASE_URL"].replace("${POSTGRES_PASSWORD:-council}", "council")
        assert urlsplit(database).hostname == "postgres"
        assert async_url(database).startswith("postgresql+asyncpg://council:council@postgres")
        assert urlsplit(env["REDIS_URL"]).hostname == "redis"
    postgres = service("postgres")["environment"]
    assert (postgres["POSTGRES_USER"], postgres["POSTGRES_DB"]) == ("council", "council")


def test_compose_and_its_env_example_use_only_setting_names() -> None:
    for name in ("web", "worker"):
        assert set(service(name)["environment"]) <= ENV_NAMES
    example = (DEPLOY / "council.env.example").read_text().splitlines()
    keys = {line.split("=", 1)[0] for line in example if "=" in line and not line.startswith("#")}
    assert keys <= ENV_NAMES
    assert {"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "COUNCIL_ALLOWED_MODELS"} <= keys


def test_the_compose_worker_check_uses_its_metrics_port() -> None:
    worker = service("worker")
    port = worker["environment"]["COUNCIL_WORKER_METRICS_PORT"]
    assert f"127.0.0.1:{port}/metrics" in " ".join(worker["healthcheck"]["test"])


# --- Kubernetes ----------------------------------------------------------------------------------


def k8s_objects() -> dict[tuple[str, str], dict[str, Any]]:
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_all(path):
            if "kind" in doc and "metadata" in doc:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


OBJECTS = k8s_objects()


def container(deployment: str) -> dict[str, Any]:
    spec = OBJECTS[("Deployment", deployment)]["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    found: dict[str, Any] = spec["containers"][0]
    return found


def test_kubernetes_has_web_worker_service_config_and_secret_examples() -> None:
    expected = {
        ("Deployment", "pr-council-web"),
        ("Service", "pr-council-web"),
        ("Deployment", "pr-council-worker"),
        ("ConfigMap", "pr-council-config"),
        ("Secret", "pr-council-env"),
        ("Secret", "pr-council-github-key"),
    }
    assert expected <= set(OBJECTS)
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert all((K8S / name).is_file() for name in kustomization["resources"])
    assert "secret.example.yaml" not in kustomization["resources"]


def test_web_and_worker_scale_separately() -> None:
    web = OBJECTS[("Deployment", "pr-council-web")]["spec"]
    worker = OBJECTS[("Deployment", "pr-council-worker")]["spec"]
    assert web["selector"] != worker["selector"]
    assert isinstance(web["replicas"], int) and isinstance(worker["replicas"], int)


def test_the_web_deployment_probes_and_serves() -> None:
    web = container("pr-council-web")
    assert web["command"] == SERVE
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in web["ports"]}
    assert ports == {"http": 8000}
    service_spec = OBJECTS[("Service", "pr-council-web")]["spec"]
    assert (
        service_spec["selector"]
        == OBJECTS[("Deployment", "pr-council-web")]["spec"]["selector"]["matchLabels"]
    )
    assert service_spec["ports"][0]["targetPort"] in ("http", 8000)


def test_the_worker_exposes_its_metrics_port() -> None:
    worker = container("pr-council-worker")
    assert worker["command"] == WORKER
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    config = OBJECTS[("ConfigMap", "pr-council-config")]["data"]
    assert ports["metrics"] == int(config["COUNCIL_WORKER_METRICS_PORT"])
    assert ports["metrics"] == Settings.model_fields["worker_metrics_port"].default
    assert worker["livenessProbe"]["httpGet"]["port"] == "metrics"


def test_kubernetes_config_and_secrets_use_setting_names_and_placeholders() -> None:
    config = OBJECTS[("ConfigMap", "pr-council-config")]["data"]
    assert set(config) <= ENV_NAMES
    secret = OBJECTS[("Secret", "pr-council-env")]["stringData"]
    assert set(secret) <= ENV_NAMES
    assert all("REPLACE_ME" in value for value in secret.values())
    key = OBJECTS[("Secret", "pr-council-github-key")]["stringData"]["github-app.pem"]
    assert "REPLACE_ME" in key
    mounted = {m["mountPath"] for m in container("pr-council-worker")["volumeMounts"]} & {
        m["mountPath"] for m in container("pr-council-web")["volumeMounts"]
    }
    assert str(Path(config["GITHUB_PRIVATE_KEY_FILE"]).parent) in mounted


@pytest.mark.parametrize("deployment", ["pr-council-web", "pr-council-worker"])
def test_both_deployments_read_the_config_and_the_secret(deployment: str) -> None:
    sources = container(deployment)["envFrom"]
    assert {"configMapRef": {"name": "pr-council-config"}} in sources
    assert {"secretRef": {"name": "pr-council-env"}} in sources


# --- the App manifest and CI -----------------------------------------------------------------


def test_the_app_manifest_asks_for_exactly_what_the_app_uses() -> None:
    manifest = yaml.safe_load((DEPLOY / "app.yml").read_text())
    assert manifest["default_permissions"] == {
        "checks": "write",
        "pull_requests": "write",
        "issues": "write",
        "contents": "read",
        "metadata": "read",
    }
    # installation and installation_repositories reach every App unasked; GitHub rejects a
    # manifest that lists them.
    assert manifest["default_events"] == ["pull_request", "issue_comment", "check_run"]
    assert urlsplit(manifest["hook_attributes"]["url"]).path == WEBHOOK_PATH
    assert manifest["public"] is False


def test_ci_runs_the_documented_command_with_redis_and_postgres() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    # YAML 1.1 reads the key `on` as True.
    triggers = workflow.get("on", workflow.get(True))
    assert {"push", "pull_request"} <= set(triggers)
    (job,) = workflow["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")
    assert set(job["services"]) == {"redis", "postgres"}
    assert "6379:6379" in job["services"]["redis"]["ports"]
    assert "5432:5432" in job["services"]["postgres"]["ports"]
    python = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python")
    )
    assert python["with"]["python-version"] == "3.11"
    runs = [shlex.split(s["run"]) for s in job["steps"] if "run" in s]
    assert ["bash", ".ci/run"] in runs


def test_every_setting_is_documented_with_its_default() -> None:
    text = (ROOT / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    missing = sorted(name for name in ENV_NAMES if not any(f"`{name}`" in r for r in rows))
    assert missing == [], f"settings without a row in the README's settings table: {missing}"

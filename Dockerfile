# syntax=docker/dockerfile:1
# PR Council: one image for both processes.
#   web:    docker run -p 8000:8000 --env-file council.env pr-council         (the default CMD)
#   worker: docker run --env-file council.env pr-council council worker
# Build from the repository root: docker build -t pr-council .

ARG PYTHON_IMAGE=python:3.11-slim

# --- builder: the pinned dependency tree and the package, into a virtualenv ----------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src

# Dependencies first, in their own layer: a code change does not reinstall them.
COPY pyproject.toml constraints.txt README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip install -c constraints.txt -r /tmp/requirements.txt

# The package. The persona catalog is agents/*.md, reached through the symlink
# bot/_agents -> ../agents, so agents/ must be in the build context beside bot/.
COPY agents/ ./agents/
COPY bot/ ./bot/
# A regular (non-editable) install: the wheel carries the personas and migrations.
# The check runs outside /src, so it sees the installed package, not the source tree.
RUN pip install -c constraints.txt . \
 && cd / && python -c "from importlib.resources import files; assert any(p.name.endswith('.md') for p in files('bot._agents').iterdir()), 'no personas in the wheel'"

# --- runtime: the virtualenv only, as an unprivileged user ---------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    XDG_STATE_HOME=/home/council/.local/state \
    COUNCIL_LOG_JSON=true
RUN groupadd --system --gid 10001 council \
 && useradd --system --uid 10001 --gid council --create-home --home-dir /home/council council
COPY --from=builder /opt/venv /opt/venv

# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
WORKDIR /home/council

# 8000: the web process (webhooks, /healthz, /readyz, /metrics); 9102: a worker's /metrics.
EXPOSE 8000 9102

# For the web process. A worker serves no /healthz: compose and Kubernetes give it its own
# check (its /metrics port).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

CMD ["council", "serve", "--host", "0.0.0.0", "--port", "8000"]

# Quick start: `make review` runs the council on the last commit; `make test` runs the suite.
# Both create .venv on first use and install the pinned tree from constraints.txt.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
REDIS_HOST ?= 127.0.0.1
REDIS_PORT ?= 6379
EMPTY_TREE := 4b825dc642cb6eb9a060e54bf8d69288fbee4904

.PHONY: review test lint typecheck unit redis browser bench bench-local coverage clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,plot]'
	touch $(STAMP)

# The last commit: against its parent, or against the empty tree for a first commit.
review: $(STAMP)
	$(BIN)/council review --base $$(git rev-parse -q --verify HEAD~1 || echo $(EMPTY_TREE))

# Four workers on two cores: a third of the suite's time is its fault and outage tests
# waiting out real recovery times at the defaults, which the other workers' CPU fills;
# worksteal keeps a worker that drew the slow tests from holding up the end.
test: $(STAMP) redis browser lint typecheck
	$(BIN)/python -m pytest -n 4 --dist worksteal -q

lint: $(STAMP)
	$(BIN)/ruff check bot tests bench
	$(BIN)/ruff format --check bot tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# The transcript page's browser test drives Debian's chromium through its chromedriver
# (no browser download): installed when missing (as root, or with sudo), else nothing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
	  echo "browser: $$(chromium --version 2>/dev/null | head -n1)"; \
	else \
	  echo "browser: installing chromium and chromium-driver (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver \
	    >/dev/null; \
	fi

# Start a throwaway Redis on the test port unless one already answers there.
redis:
	@if (exec 3<>/dev/tcp/$(REDIS_HOST)/$(REDIS_PORT)) 2>/dev/null; then \
	  echo "redis: answering on $(REDIS_HOST):$(REDIS_PORT)"; \
	else \
	  echo "redis: starting redis-server on $(REDIS_HOST):$(REDIS_PORT)"; \
	  redis-server --daemonize yes --bind $(REDIS_HOST) --port $(REDIS_PORT) \
	    --save "" --appendonly no --dir /tmp --logfile /tmp/pr-council-redis.log; \
	  for i in 1 2 3 4 5 6 7 8 9 10; do \
	    (exec 3<>/dev/tcp/$(REDIS_HOST)/$(REDIS_PORT)) 2>/dev/null && break; sleep 0.3; \
	  done; \
	fi

bench: $(STAMP) redis
	$(BIN)/python bench/deliberation.py
	$(BIN)/python bench/context.py
	$(BIN)/python bench/webhook.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/negotiation.py
	$(BIN)/python bench/advisory.py
	$(BIN)/python bench/scale.py
	$(BIN)/python -m bench.reservations

# Golden-location coverage on AACR-Bench: needs its clone and the PR repositories' clones
# (README, "Measured"), so it is not part of `make bench`.
AACR ?= $(HOME)/aacr/aacr-bench
AACR_REPOS ?= $(HOME)/aacr
coverage: $(STAMP)
	$(BIN)/python bench/coverage.py --aacr $(AACR) --repos $(AACR_REPOS)

# A review on a self-hosted model server you started (README, "CPU servers"): minutes to an
# hour on a CPU, so not part of `make bench`. LOCAL_URL: the server's OpenAI-compatible API.
LOCAL_URL ?= http://127.0.0.1:8000/v1
LOCAL_MODEL ?= qwen2.5-coder-1.5b-instruct-q4_k_m
bench-local: $(STAMP)
	$(BIN)/python bench/local.py --base-url $(LOCAL_URL) --model $(LOCAL_MODEL)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

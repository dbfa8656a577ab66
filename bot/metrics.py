"""Prometheus metrics: one registry of names, shared by the web process and the workers.

Each process exposes its own counters (`/metrics` on the web app; the worker serves its own
port), so the metric objects are defined once, here.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

DELIVERIES = Counter(
    "council_webhook_deliveries_total",
    "Webhook deliveries by event and outcome (queued, duplicate, ignored, rejected, invalid).",
    ["event", "outcome"],
)
JOBS = Counter("council_jobs_total", "Jobs by function and final state.", ["function", "state"])
JOBS_RUNNING = Gauge("council_jobs_running", "Jobs running in this worker.")
DELIBERATION_SECONDS = Histogram(
    "council_deliberation_seconds",
    "Wall time of a deliberation by protocol.",
    ["protocol"],
    buckets=(5, 15, 30, 60, 120, 240, 480, 900, 1800),
)
MODEL_TOKENS = Counter(
    "council_model_tokens_total",
    "Model tokens by model and kind (input, output, cache_write, cache_read).",
    ["model", "kind"],
)
MODEL_COST = Counter("council_model_cost_usd_total", "Estimated model spend.", ["model"])
GITHUB_CALLS = Counter(
    "council_github_api_calls_total",
    "GitHub REST calls by method and status.",
    ["method", "status"],
)
GITHUB_RATE_LIMIT_WAITS = Counter(
    "council_github_rate_limit_waits_total", "Times a GitHub call waited on a rate limit."
)
GITHUB_RATE_LIMIT_WAIT_SECONDS = Counter(
    "council_github_rate_limit_wait_seconds_total", "Seconds spent waiting on rate limits."
)
REDIS_DOWN = Gauge(
    "council_worker_redis_down",
    "1 while this worker cannot reach Redis (it keeps running and retries), else 0.",
)

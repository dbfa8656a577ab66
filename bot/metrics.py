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
# Per call, labelled by the one model reference called (e.g. "anthropic:claude-sonnet-5-5").
MODEL_CALL_SECONDS = Histogram(
    "council_model_call_seconds",
    "Model call latency (the SDK's retries included), by model, answered or failed.",
    ["model"],
    buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320),
)
MODEL_CALL_ERRORS = Counter(
    "council_model_call_errors_total",
    "Model calls without a usable answer, by model and error kind (timeout, rate_limited, ...).",
    ["model", "kind"],
)
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
GITHUB_REQUESTS_LEFT = Gauge(
    "council_github_requests_left",
    "Requests left in the installation's GitHub rate limit, as last answered.",
    ["installation"],
)
GITHUB_REVIEWS_WAITING = Counter(
    "council_github_reviews_waiting_total",
    "Reviews put back in the queue until an installation's GitHub rate limit resets.",
)
GITHUB_BLOB_READS = Counter(
    "council_github_blob_reads_total",
    "Repository files read for a review, by where they came from (cache, archive, blob, contents).",
    ["source"],
)
QUEUE_JOBS = Gauge(
    "council_queue_jobs",
    "Jobs in the arq queue by state: waiting (due, no worker has it), running (a worker has "
    "it; arq keeps it in the queue until it ends), deferred (due later). Read from Redis by "
    "the web process when /metrics is scraped.",
    ["queue", "state"],
)
QUEUE_OLDEST_WAITING_SECONDS = Gauge(
    "council_queue_oldest_waiting_seconds",
    "How long the oldest waiting job (due, not running) has waited; 0 when none waits. "
    "Read from Redis by the web process when /metrics is scraped.",
    ["queue"],
)
OUTCOMES = Counter(
    "council_deliberation_outcomes_total",
    "Finished deliberations by resolution (APPROVED, APPROVED_WITH_CONDITIONS, ESCALATE, "
    "REJECTED, NO_QUORUM, COST_LIMIT, CANCELLED, FAILED, NOTHING_TO_REVIEW).",
    ["resolution"],
)
REDIS_DOWN = Gauge(
    "council_worker_redis_down",
    "1 while this worker cannot reach Redis (it keeps running and retries), else 0.",
)

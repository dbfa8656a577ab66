"""The concept table of board scoring (bot/council/scoring.py): the synonyms a change's
terms and a persona's task types normalize through, and the divisions a dominant area
points at. Pure data."""

from __future__ import annotations

__all__ = ["AREA_DIVISIONS", "CONCEPTS", "KNOWN_TERMS", "SYNONYMS"]

# synonym -> concept. Concepts are also the names persona task types normalize to, and a
# term that is not listed is its own concept. Keys and values are `_slug`-shaped.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "security": (
        "auth", "authn", "authz", "authentication", "authorization", "jwt", "oauth", "oidc",
        "saml", "sso", "xss", "csrf", "ssrf", "injection", "sql-injection", "secrets",
        "secret", "crypto", "cryptography", "encryption", "tls", "vulnerability", "cve",
        "permissions", "rbac", "sanitization", "session", "password", "appsec",
    ),
    "privacy": ("pii", "gdpr", "personal-data"),
    "performance": (
        "latency", "throughput", "perf", "slow", "speed", "optimization", "optimize",
        "memory", "cpu", "allocation", "profiling", "hot-path", "benchmark", "benchmarks",
        "scalability", "scaling", "n+1",
    ),
    "caching": ("cache", "caches", "memoization", "memoize", "cdn"),
    "concurrency": (
        "async", "asyncio", "thread", "threads", "threading", "race", "race-condition",
        "locking", "lock", "locks", "deadlock", "parallel", "parallelism", "goroutine",
        "mutex", "atomic",
    ),
    "database": (
        "sql", "schema", "migration", "migrations", "db", "postgres", "postgresql",
        "mysql", "sqlite", "query", "queries", "orm", "index", "indexes", "transaction",
        "transactions", "alembic", "schema-change", "backfill",
    ),
    "public-api": (
        "api", "rest", "endpoint", "endpoints", "openapi", "swagger", "graphql", "grpc",
        "protobuf", "http-api", "breaking-change", "versioning", "backward-compatibility",
        "sdk", "library",
    ),
    "testing": (
        "test", "tests", "tests-only", "unit-test", "unit-tests", "coverage", "flaky",
        "flaky-tests", "fixtures", "mocking", "e2e", "integration-test",
    ),
    "ci-cd": ("ci", "cd", "workflow", "workflows", "github-actions", "pipeline", "pipelines"),
    "infrastructure": (
        "infra", "docker", "dockerfile", "kubernetes", "k8s", "helm", "terraform", "deploy",
        "deployment", "container", "containers", "iac", "compose",
    ),
    "dependencies": (
        "dependency", "deps", "lockfile", "requirements", "supply-chain", "sbom", "vendoring",
        "package-manifest",
    ),
    "reliability": (
        "resilience", "retry", "retries", "timeout", "timeouts", "outage", "incident",
        "availability", "failover", "circuit-breaker", "error-handling",
    ),
    "observability": ("logging", "logs", "metrics", "tracing", "monitoring", "alerting"),
    "frontend": (
        "ui", "css", "html", "react", "vue", "angular", "svelte", "component", "components",
        "browser", "dom",
    ),
    "accessibility": ("a11y", "aria", "wcag", "screen-reader", "keyboard-navigation"),
    "documentation": (
        "docs", "doc", "docs-only", "readme", "changelog", "docstring", "docstrings",
        "markdown", "adr", "technical-writing",
    ),
    "maintainability": (
        "readability", "refactor", "refactoring", "complexity", "naming", "duplication",
        "dead-code", "code-smell", "tech-debt", "cleanup", "code-quality",
    ),
    "architecture": (
        "design", "system-design", "modularity", "coupling", "cohesion", "layering",
        "module-boundaries", "abstraction", "microservices", "monolith",
    ),
    "product": ("ux", "user-experience", "user-facing", "user-impact", "feature-flags"),
    "risk": ("risky", "risks", "assumption", "assumptions", "failure-modes"),
    "correctness": (
        "bug", "bugs", "bugfix", "bug-fix", "logic", "edge-case", "edge-cases", "off-by-one",
    ),
    # Choice-shaped topics ("should this cache live in Redis?") call for a devil's advocate.
    "decision": (
        "should", "choice", "choose", "versus", "vs", "proposal", "alternative",
        "alternatives", "tradeoff", "tradeoffs", "trade-off", "trade-offs",
    ),
}  # fmt: skip
CONCEPTS: dict[str, str] = {
    synonym: concept for concept, synonyms in SYNONYMS.items() for synonym in synonyms
}
KNOWN_TERMS = frozenset(CONCEPTS) | frozenset(SYNONYMS)

# The divisions a dominant area (as a concept) points at; otherwise a division of that name.
AREA_DIVISIONS: dict[str, frozenset[str]] = {
    "security": frozenset({"security"}),
    "privacy": frozenset({"security", "data"}),
    "dependencies": frozenset({"security"}),
    "ci-cd": frozenset({"operations", "security"}),
    "infrastructure": frozenset({"operations", "reliability"}),
    "database": frozenset({"data"}),
    "public-api": frozenset({"api-design"}),
    "concurrency": frozenset({"performance"}),
    "caching": frozenset({"performance"}),
    "performance": frozenset({"performance"}),
    "documentation": frozenset({"documentation", "maintainability"}),
    "testing": frozenset({"testing"}),
    "frontend": frozenset({"frontend"}),
    "accessibility": frozenset({"frontend"}),
    "reliability": frozenset({"reliability"}),
    "observability": frozenset({"reliability"}),
    "risk": frozenset({"adversarial"}),
    "decision": frozenset({"adversarial", "architecture"}),
}

"""What the code of a change does, read from its diff: the areas its added lines touch,
each with the construct seen and the first line it was seen on.

Concurrency is read per language, from the constructs that start or coordinate concurrent
work: trio nurseries, anyio task groups, asyncio's gather/create_task/TaskGroup, threads and
executors, goroutines and channels, `sync.Mutex`, Java's `synchronized` and
`ExecutorService`, tokio tasks, `Promise.all`... (an `async def` alone is not concurrency).
Security, database, public API and performance are read from words and calls of the added
lines. Each finding is a `ChangeEvidence` whose `what` the board cites ("it uses trio
(nursery.start_soon) in graphrag/utils.py:442", bot/council/boardplan.py).

Added lines are what counts, with one exception: an access check (a tenant compared, a
permission checked) among a hunk's context or removed lines is security evidence too
(`around_evidence`), though not a touched area. A file that merely mentions "password"
somewhere, or imports trio, does not make every change to it a security or a concurrency
review.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.context.models import ChangeEvidence

_JS = frozenset({"javascript", "typescript", "vue", "svelte"})


@dataclass(frozen=True)
class _Rule:
    concept: str
    family: str  # what the construct is, for the citation ("trio", "goroutines", "SQL")
    hints: tuple[str, ...]  # a cheap substring test on the lowercased added text first
    pattern: re.Pattern[str]  # on each lowercased added line
    languages: frozenset[str] | None = None  # None: every code language


def _rule(
    concept: str, family: str, hints: tuple[str, ...], rx: str, languages: Sequence[str] = ()
) -> _Rule:
    return _Rule(concept, family, hints, re.compile(rx), frozenset(languages) or None)


RULES: tuple[_Rule, ...] = (
    # --- concurrency: what starts or coordinates concurrent work ------------------------
    _rule("concurrency", "trio", ("trio", "nursery"),
          r"\btrio\.[a-z_.]+|\bnursery\.start(?:_soon)?\b|\bopen_nursery\b", ["python"]),
    _rule("concurrency", "anyio", ("anyio", "task_group"),
          r"\banyio\.[a-z_.]+|\bcreate_task_group\b", ["python"]),
    _rule("concurrency", "asyncio", ("asyncio", "taskgroup"),
          r"\basyncio\.(?:gather|create_task|ensure_future|wait|wait_for|as_completed|taskgroup"
          r"|lock|semaphore|event|condition|queue|to_thread|run_coroutine_threadsafe|shield)\b"
          r"|\btaskgroup\(", ["python"]),
    _rule("concurrency", "threads", ("thread", "executor", "futures", "multiprocessing", "lock("),
          r"\bthreading\b|\bthread\(|\bthreadpoolexecutor\b|\bprocesspoolexecutor\b"
          r"|\bconcurrent\.futures\b|\bmultiprocessing\b|\b(?:r)?lock\(\)", ["python"]),
    _rule("concurrency", "goroutines", ("go ",), r"^\s*go\s+(?:func\b|[\w.]+\()", ["go"]),
    _rule("concurrency", "channels", ("chan", "<-", "select"),
          r"\bchan\b|<-|^\s*select\s*\{", ["go"]),
    _rule("concurrency", "sync", ("sync.", "errgroup", "atomic."),
          r"\bsync\.(?:mutex|rwmutex|waitgroup|once|map|cond|pool)\b|\berrgroup\."
          r"|\batomic\.(?:add|load|store|swap|compareandswap|int32|int64|bool|value|pointer)",
          ["go"]),
    _rule("concurrency", "java concurrency",
          ("synchronized", "executor", "completablefuture", "concurrent", "atomic", "lock",
           "volatile", "latch", "thread"),
          r"\bsynchronized\b|\bexecutorservice\b|\bexecutors\.|\bcompletablefuture\b"
          r"|\bconcurrenthashmap\b|\batomic(?:integer|long|boolean|reference)\b"
          r"|\breentrant(?:readwrite)?lock\b|\bcountdownlatch\b|\bvolatile\b|\bnew thread\(",
          ["java", "kotlin", "scala"]),
    _rule("concurrency", "coroutines", ("launch", "async", "coroutinescope", "withcontext"),
          r"\b(?:launch|async)\s*(?:\([^)]*\))?\s*\{|\bcoroutinescope\b|\bwithcontext\(",
          ["kotlin"]),
    _rule("concurrency", "rust concurrency", ("tokio", "thread", "mutex", "rwlock", "mpsc", "arc<"),
          r"\btokio::(?:spawn|select|join|sync)|\bstd::thread\b|\bthread::spawn\b|\bmutex<"
          r"|\brwlock<|\bmpsc::", ["rust"]),
    _rule("concurrency", "promises", ("promise.", "worker(", "atomics.", "sharedarraybuffer"),
          r"\bpromise\.(?:all|race|allsettled|any)\b|\bnew worker\(|\batomics\."
          r"|\bsharedarraybuffer\b", sorted(_JS)),
    _rule("concurrency", "tasks", ("task.", "parallel.", "interlocked", "semaphoreslim", "lock"),
          r"\btask\.(?:run|whenall|whenany)\b|\bparallel\.|\binterlocked\.|\bsemaphoreslim\b"
          r"|^\s*lock\s*\(", ["csharp"]),
    _rule("concurrency", "threads", ("pthread", "std::thread", "std::mutex", "std::atomic", "omp"),
          r"\bpthread_|\bstd::(?:thread|mutex|atomic|async|jthread)\b|#pragma omp", ["c", "cpp"]),
    # --- security: authentication, authorization, tenancy, secrets, cryptography --------
    _rule("security", "security-sensitive code",
          ("passw", "secret", "jwt", "bcrypt", "hashlib", "hmac", "crypto", "csrf",
           "permission", "authori", "authenticat", "acl", "sanitiz", "escape(", "verify_",
           "x509", "oauth", "tenant", "login_required", "privilege"),
          r"passw(?:or)?d|secret|jwt|bcrypt|hashlib|hmac|crypto|csrf|permission|authori[sz]"
          r"|authenticat|\bacl\b|sanitiz|escape\(|verify_|x509|oauth|login_required|privilege"
          # A tenant compared or filtered on (a tenant check), not one passed along.
          r"|\b(?:if|elif|where|filter(?:_by)?|and|or|assert|unless)\b.*tenant"
          r"|tenant\w*\s*(?:==|!=|===|!==)|(?:==|!=)\s*[\w.\[\]'\"]*tenant"),
    # --- database: SQL and ORM calls ------------------------------------------------------
    _rule("database", "database code",
          ("select", "insert", "update", "delete", "create", "alter", "session.query",
           ".objects.", "foreignkey", "column(", "@entity", "gorm."),
          r"\b(?:select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from"
          r"|create\s+(?:table|index)|alter\s+table)\b|session\.query|\.objects\.|foreignkey"
          r"|column\(|@entity\b|\bgorm\."),
    # --- public API: routes and handlers --------------------------------------------------
    _rule("public-api", "an API route",
          ("@app.", "@router.", "@bp.", "@api.", "mapping", "handlefunc(", "app.get(",
           "app.post(", "app.put("),
          r"@(?:app|router|bp|api)\.(?:get|post|put|patch|delete|route)\b"
          r"|@(?:get|post|put|delete|request)mapping|\bhandlefunc\(|\bapp\.(?:get|post|put)\("),
    # --- performance: caching, batching, profiling ----------------------------------------
    _rule("performance", "performance code",
          ("lru_cache", "@cache", "memoi", "benchmark", "profil", "o(n", "prefetch",
           "batch_size", "pool_size"),
          r"lru_cache|@cache\b|memoi[sz]|benchmark|profil|\bo\(n|prefetch|batch_size|pool_size"),
)  # fmt: skip
# Calls of a query builder (`.where(`, `.filter(`, `.execute(`): database code only in a file
# that imports a database library (bot/context/signals.py decides; a JS `.filter(` is not).
QUERY_CALLS = re.compile(
    r"\.(?:where|filter|filter_by|select|query|execute|executemany|insert|insert_many"
    r"|update|delete|commit|rollback|atomic|in_|order_by|get_or_none|get_or_create|bulk_create"
    r"|bulk_update|raw|scalars?|findmany|findunique|findone|aggregate)\s*\("
)
# Import names (or their prefixes) of database libraries and ORMs.
DATABASE_IMPORTS = frozenset(
    {"sqlalchemy", "peewee", "django.db", "tortoise", "sqlmodel", "pony.orm", "mongoengine",
     "pymongo", "motor", "psycopg", "psycopg2", "asyncpg", "pymysql", "mysql.connector",
     "sqlite3", "aiosqlite", "databases", "alembic", "playhouse", "gorm.io/gorm",
     "database/sql", "github.com/jmoiron/sqlx", "github.com/jackc/pgx", "entgo.io/ent",
     "go.mongodb.org/mongo-driver", "typeorm", "sequelize", "@prisma/client", "prisma",
     "mongoose", "knex", "drizzle-orm", "kysely", "pg", "mysql2", "better-sqlite3",
     "javax.persistence", "jakarta.persistence", "org.hibernate", "java.sql",
     "org.springframework.data", "org.springframework.jdbc", "org.jooq", "activerecord",
     "sqlx", "diesel", "sea_orm"}
)  # fmt: skip
QUERY_HINT = "query-call"  # ChangeEvidence.concept of a query-builder call (not an area)
_WHAT_MAX = 40


def line_evidence(
    path: str, language: str | None, lines: Sequence[tuple[int, str]]
) -> list[ChangeEvidence]:
    """Per rule that matches, the first added line it matches (one per concept and family),
    and the first query-builder call (`QUERY_HINT`)."""
    text = "\n".join(t for _, t in lines).lower()
    # Concurrency is what the code does: a word in a string or a comment ("threading" in a
    # table of synonyms, "use a lock here" in a docstring) starts nothing.
    code = [(n, code_only(t)) for n, t in lines]
    code_text = "\n".join(t for _, t in code).lower()
    found: list[ChangeEvidence] = []
    for rule in RULES:
        if rule.languages is not None and language not in rule.languages:
            continue
        read, seen_text = (code, code_text) if rule.concept == "concurrency" else (lines, text)
        if not any(h in seen_text for h in rule.hints):
            continue
        hit = _first(rule.pattern, read)
        if hit is not None:
            number, seen = hit
            named = seen if seen.startswith(rule.family) else f"{rule.family} ({seen})"
            what = f"{'uses' if rule.concept == 'concurrency' else 'touches'} {named}"
            found.append(ChangeEvidence(concept=rule.concept, what=what, path=path, line=number))
    if "(" in text:
        hit = _first(QUERY_CALLS, lines)
        if hit is not None:
            found.append(
                ChangeEvidence(concept=QUERY_HINT, what=f"calls {hit[1]}()", path=path, line=hit[0])
            )
    return found


# An access check: a tenant compared or filtered on, a permission or role checked. Read on
# the lines around an addition too (a hunk's context and removed lines): a change inside or
# beside an access check can widen who may do what (ragflow#6553: a lookup moved out of the
# loop that checked each document's tenant).
ACCESS_CHECK = re.compile(
    r"\b(?:if|elif|unless|assert|where|filter(?:_by)?|and|or)\b.*\b(?:tenant|permission"
    r"|authori[sz]|is_admin|is_superuser|has_perm|can_access|access_denied|forbidden)"
    r"|tenant\w*\s*(?:==|!=|===|!==)|(?:==|!=)\s*[\w.\[\]'\"]*tenant"
    r"|@(?:login|permission)_required|\b(?:check|require|has)_permissions?\("
)


def around_evidence(path: str, hunks: Sequence[tuple[int, str, str]]) -> ChangeEvidence | None:
    """The first access check among the lines around the additions: `hunks` is each
    context or removed line as (head line number it sits at, "context" or "removed",
    text)."""
    for number, where, text in hunks:
        match = ACCESS_CHECK.search(text.lower())
        if match:
            seen = " ".join(text.split())[:_WHAT_MAX]
            verb = "removes" if where == "removed" else "sits beside"
            what = f"{verb} an access check ({seen})"
            return ChangeEvidence(concept="security", what=what, path=path, line=number)
    return None


# A string literal (one line; its quotes kept) or a comment to the end of the line: `#`
# after code or at its start, `//` not inside a URL.
_STRING_OR_COMMENT = re.compile(
    r"""(?P<q>["'`])(?:\\.|(?!(?P=q)).)*(?P=q)|(?:^|\s)#(?![!\[]).*$|(?<!:)//.*$"""
)


def code_only(line: str) -> str:
    """`line` with its string literals emptied and its comment dropped (a rough cut, every
    language at once: what a construct rule may match is code)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group("q") * 2 if m.group("q") else "", line)


def _first(pattern: re.Pattern[str], lines: Sequence[tuple[int, str]]) -> tuple[int, str] | None:
    for number, line in lines:
        match = pattern.search(line.lower())
        if match:
            return number, " ".join(match.group(0).split())[:_WHAT_MAX].rstrip("( ")
    return None

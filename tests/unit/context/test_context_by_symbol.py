"""Context by symbol on a small Python repository made here: a change to a method shows the
definitions it uses (with their line numbers), the callers of the changed method in other
files, each with why it is there, and no more than that: far below the budget."""

from __future__ import annotations

import difflib

from bot.context import BuiltContext, PullRequestMeta, Section, build_context
from bot.tokens import TokenEstimator

FILLER = "".join(
    f"\n\ndef unrelated_{i}(value):\n    step = value * {i}\n    return step + {i}\n"
    for i in range(40)
)
COMMON = (
    '"""Shared service helpers."""\n\n\nclass CommonService:\n    model = None\n\n'
    "    @classmethod\n    def query(cls, **kwargs):\n        return cls.model.select(**kwargs)\n\n"
    "    @classmethod\n    def delete(cls, *conditions):\n"
    '        """Delete the rows matching every condition."""\n'
    "        return cls.model.delete().where(*conditions).execute()\n" + FILLER
)
MODELS = (
    "from peewee import CharField, IntegerField, Model\n\n\n"
    "class Document(Model):\n"
    "    id = CharField(primary_key=True)\n"
    "    kb_id = CharField(index=True)\n"
    "    name = CharField()\n"
    "    size = IntegerField(default=0)\n\n"
    "    def describe(self):\n        return f'{self.name} ({self.size})'\n" + FILLER
)
SERVICE_BEFORE = (
    "from db.models import Document\nfrom services.common_service import CommonService\n\n\n"
    "class DocumentService(CommonService):\n    model = Document\n\n"
    "    @classmethod\n    def remove_docs(cls, kb_id):\n        removed = 0\n"
    "        return removed\n" + FILLER
)
SERVICE = SERVICE_BEFORE.replace(
    "        removed = 0\n",
    "        removed = CommonService.delete(Document.kb_id == kb_id)\n",
)
API = (
    "from services.document_service import DocumentService\n" + FILLER + "\n\n"
    "def delete_kb(request):\n    kb_id = request.args['kb_id']\n"
    "    count = DocumentService.remove_docs(kb_id)\n    return {'removed': count}\n"
)
REPO = {
    "db/__init__.py": "",
    "db/models.py": MODELS,
    "services/__init__.py": "",
    "services/common_service.py": COMMON,
    "services/document_service.py": SERVICE,
    "api/__init__.py": "",
    "api/kb_app.py": API,
    "README.md": "# Knowledge base\n\nDocuments in knowledge bases.\n",
}
DIFF = "diff --git a/services/document_service.py b/services/document_service.py\n" + "".join(
    difflib.unified_diff(
        SERVICE_BEFORE.splitlines(keepends=True),
        SERVICE.splitlines(keepends=True),
        "a/services/document_service.py",
        "b/services/document_service.py",
    )
)


async def build() -> BuiltContext:
    async def read(path: str) -> bytes | None:
        return REPO[path].encode() if path in REPO else None

    return await build_context(
        PullRequestMeta(title="Remove a knowledge base's documents"),
        DIFF,
        sorted(REPO),
        read,
        budget_tokens=60_000,
        estimator=TokenEstimator(),
    )


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def shows(section: Section, number: int, text: str) -> bool:
    return any(line.startswith(f"{number:>4}   {text}") for line in section.text.split("\n"))


async def test_a_changed_method_shows_what_it_uses_and_who_calls_it() -> None:
    built = await build()
    by = {s.path: s for s in built.sections if s.kind != "guidance" and s.path}
    # `CommonService.delete`, the definition the change calls, whole, with its numbers.
    common = by["services/common_service.py"]
    delete = line_of(COMMON, "def delete(")
    assert shows(common, delete, "    def delete(cls, *conditions):")
    assert shows(common, delete + 2, "        return cls.model.delete()")
    assert (
        f"method `CommonService.delete`, lines {delete - 1}-{delete + 2}, called by"
        in (common.text.split("\n", 1)[0])
    )
    assert "unrelated_" not in common.text  # not the rest of the file
    # `Document`, whose field the change reads: its fields.
    models = by["db/models.py"]
    assert shows(models, line_of(MODELS, "kb_id = "), "    kb_id = CharField(index=True)")
    assert shows(models, line_of(MODELS, "class Document"), "class Document(Model):")
    assert "`Document`" in models.why and "remove_docs" in models.why
    # The caller of the changed method, in another file: its enclosing function.
    api = by["api/kb_app.py"]
    assert api.why == "calls the changed `remove_docs`"
    assert shows(api, line_of(API, "def delete_kb"), "def delete_kb(request):")
    assert shows(api, line_of(API, "remove_docs(kb_id)"), "    count = DocumentService")
    assert "unrelated_" not in api.text
    # The changed file: its diff, and nothing of its 40 unrelated functions.
    assert all("unrelated_" not in s.text for s in built.sections if s.kind == "code")
    assert built.tokens < 8_000 and built.tokens < built.usable // 5


async def test_bounded_references_are_listed_as_not_included() -> None:
    callers = {
        f"api/app_{n}.py": "from services.document_service import DocumentService\n\n\n"
        f"def handler_{n}(kb_id):\n    return DocumentService.remove_docs(kb_id)\n"
        for n in range(14)
    }
    repo = {**REPO, **callers}

    async def read(path: str) -> bytes | None:
        return repo[path].encode() if path in repo else None

    built = await build_context(
        PullRequestMeta(title="t"), DIFF, sorted(repo), read, estimator=TokenEstimator()
    )
    shown = [s.path for s in built.sections if s.path and s.path.startswith("api/")]
    assert len(shown) == 10
    reasons = {o.path: o.reason for o in built.omitted}
    assert reasons["`remove_docs`"] == "references bounded: named in 15 files; 10 shown"

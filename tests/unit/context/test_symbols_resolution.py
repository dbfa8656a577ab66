"""Context by symbol on small repositories made in the test, one per language: the symbols a
change touches, the definitions it uses (resolved through imports, the file, the package,
the classes it uses) and who references what it changed, code first."""

from __future__ import annotations

from bot.context.models import ReadFile
from bot.context.symbolic import SymbolAnalysis, SymbolReferences, UsedResult


def reader(files: dict[str, str]) -> ReadFile:
    async def read(path: str) -> bytes | None:
        text = files.get(path)
        return None if text is None else text.encode()

    return read


def analysis(repo: dict[str, str], changed: str, runs: list[tuple[int, int]]) -> SymbolAnalysis:
    return SymbolAnalysis(sorted(repo), reader(repo), {changed: repo[changed]}, {changed: runs})


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


def resolved(result: UsedResult) -> dict[str, tuple[list[tuple[str, str, int, int]], str]]:
    """name as used -> ([(path, qualified name, start, end) of each definition], via)."""
    return {
        u.name: ([(d.path, d.qualified, d.start, d.end) for d in u.definitions], u.via)
        for u in result.used
    }


def referencing(refs: SymbolReferences) -> list[tuple[str, str, list[int]]]:
    return [(f.path, f.role, [s.line for s in f.sites]) for f in refs.files]


# --- Python -------------------------------------------------------------------------------

COMMON = '''class CommonService:
    """Shared operations."""

    model = None

    @classmethod
    def delete(cls, ids):
        """Delete rows."""
        return cls.model.delete(ids)

    @classmethod
    def get(cls, id):
        return None
'''
MODELS = """from sqlalchemy import Column, Integer, String


class Document(Base):
    __tablename__ = "documents"
    id = Column(Integer, primary_key=True)
    kb_id = Column(String)
    name = Column(String)

    def label(self):
        return self.name
"""
DOCS = """from app.models import Document
from app.services.common import CommonService


def resolve_entities(kb_id):
    rows = Document.query.filter(Document.kb_id == kb_id)
    return [r.id for r in rows]


def delete_docs(kb_id):
    ids = resolve_entities(kb_id)
    CommonService.delete(ids)
    return len(ids)
"""
PY_REPO = {
    "app/__init__.py": "",
    "app/services/__init__.py": "",
    "app/services/common.py": COMMON,
    "app/models.py": MODELS,
    "app/docs.py": DOCS,
    "app/api.py": (
        "from app.docs import delete_docs, resolve_entities\n\n\n"
        "def handle(req):\n    return delete_docs(req.kb)\n\n\n"
        "def lookup(req):\n    return resolve_entities(req.kb)\n"
    ),
    "tests/test_docs.py": (
        "from app.docs import delete_docs\n\n\n"
        "def test_delete_docs():\n    assert delete_docs('kb') == 0\n"
    ),
    "docs/usage.md": "Call `delete_docs` to remove a knowledge base's documents.\n",
    "config/jobs.yaml": "task: app.docs.delete_docs\n",
    "app/unrelated.py": "def delete_docs_later():\n    return 'delete_docs'\n",
}


async def test_python_change_its_symbols_what_it_uses_and_its_callers() -> None:
    found = analysis(PY_REPO, "app/docs.py", [(6, 7), (11, 12)])

    changed = found.changed_symbols("app/docs.py")
    assert [(s.name, s.definition.start, s.definition.end, s.lines) for s in changed] == [
        ("resolve_entities", 5, 7, (6, 7)),
        ("delete_docs", 10, 13, (11, 12)),
    ]

    used = await found.resolve_used("app/docs.py")
    assert resolved(used) == {
        # `CommonService.delete`: the method, through the import of its class.
        "delete": ([("app/services/common.py", "CommonService.delete", 6, 9)], "class"),
        # `Document.query.filter(Document.kb_id == ...)`: the model class, fields and all.
        "Document": ([("app/models.py", "Document", 4, 11)], "class"),
        "resolve_entities": ([("app/docs.py", "resolve_entities", 5, 7)], "same file"),
    }
    whys = {u.name: u.why for u in used.used}
    assert whys["delete"] == "called by the changed `delete_docs`"
    assert whys["resolve_entities"] == "called by the changed `delete_docs`"
    assert whys["Document"].startswith("defines `Document`, used by the changed `resolve_entities`")
    assert "`Document.kb_id`" in whys["Document"]
    names = {(u.name, u.qualifier): b for u, b in found.used_names("app/docs.py")}
    binding = names[("delete", "CommonService")]
    assert binding is not None and (binding.local, binding.line) == ("CommonService", 2)
    assert names[("resolve_entities", None)] is None  # defined in the file itself
    delete = next(u for u in used.used if u.name == "delete")
    assert delete.qualifier == "CommonService"
    assert delete.binding is not None and delete.binding.module == "app.services.common"
    model = next(d for u in used.used for d in u.definitions if d.name == "Document")
    assert (model.signature_end, model.fields_end) == (4, 9)  # the header and the columns

    refs = {r.name: r for r in await found.references(changed)}
    assert referencing(refs["delete_docs"]) == [
        ("app/api.py", "code", [1, 5]),
        ("tests/test_docs.py", "test", [1, 5]),
        ("config/jobs.yaml", "configuration", [1]),
        ("docs/usage.md", "documentation", [1]),
    ]
    api = refs["delete_docs"].files[0]
    assert api.why == "calls the changed `delete_docs`"
    call = api.sites[1]
    assert call.enclosing is not None
    assert (call.enclosing.name, call.enclosing.start, call.enclosing.end) == ("handle", 4, 5)
    # The changed file's own call counts; the string in app/unrelated.py does not.
    assert referencing(refs["resolve_entities"]) == [
        ("app/api.py", "code", [1, 9]),
        ("app/docs.py", "code", [11]),
    ]
    assert refs["delete_docs"].seen == 4 and not refs["delete_docs"].bounded


async def test_python_docstring_and_self_and_typed_locals() -> None:
    service = (
        "from app.services.common import CommonService\n\n\n"
        "class Cleaner:\n"
        '    """Cleans."""\n\n'
        "    def run(self, svc: CommonService):\n"
        "        self.purge()\n"
        "        return svc.get(1)\n\n"
        "    def purge(self):\n"
        "        pass\n"
    )
    repo = {**PY_REPO, "app/cleaner.py": service}
    found = analysis(repo, "app/cleaner.py", [(8, 9)])
    [symbol] = found.changed_symbols("app/cleaner.py")
    assert (symbol.definition.qualified, symbol.definition.kind) == ("Cleaner.run", "method")
    used = resolved(await found.resolve_used("app/cleaner.py"))
    assert used["purge"] == ([("app/cleaner.py", "Cleaner.purge", 11, 12)], "same file")
    assert used["get"] == ([("app/services/common.py", "CommonService.get", 11, 13)], "class")


async def test_python_reexports_and_a_method_of_an_unknown_receiver() -> None:
    """`from app.services import CommonService` through the package's `__init__.py`; `repo`
    of unknown type: the only `delete` among the classes the file imports; `store` neither:
    the one `wipe_all` of the tree."""
    changed = (
        "from app.services import CommonService\n\n\n"
        "def purge(repo, store, ids):\n"
        "    CommonService.get(ids[0])\n"
        "    repo.delete(ids)\n"
        "    store.wipe_all()\n"
    )
    repo = {
        **PY_REPO,
        "app/services/__init__.py": "from .common import CommonService\n",
        "app/purge.py": changed,
        "app/storage.py": "class Storage:\n    def wipe_all(self):\n        pass\n",
        "app/other.py": "class Other:\n    def delete(self):\n        pass\n",
    }
    found = analysis(repo, "app/purge.py", [(5, 7)])
    used = resolved(await found.resolve_used("app/purge.py"))
    common = "app/services/common.py"
    assert used["get"] == ([(common, "CommonService.get", 11, 13)], "class")
    assert used["delete"] == ([(common, "CommonService.delete", 6, 9)], "class")
    assert used["wipe_all"] == ([("app/storage.py", "Storage.wipe_all", 2, 3)], "index")


# --- TypeScript ---------------------------------------------------------------------------

CLIENT = """import type { User } from "../models/user";

export class ApiClient {
  /** Fetch a user. */
  async fetchUser(id: string): Promise<User> {
    return request(`/users/${id}`);
  }
}

function request(url: string): Promise<any> {
  return fetch(url).then((r) => r.json());
}
"""
USER_SERVICE = """import { ApiClient } from "../api/client";
import type { User } from "../models/user";

export class UserService {
  constructor(private client: ApiClient) {}

  async load(id: string): Promise<User> {
    const user = await this.client.fetchUser(id);
    return normalize(user);
  }
}

export function normalize(u: User): User {
  return { ...u, name: u.name.trim() };
}
"""
TS_REPO = {
    "src/api/client.ts": CLIENT,
    "src/models/user.ts": "export interface User {\n  id: string;\n  name: string;\n}\n",
    "src/services/userService.ts": USER_SERVICE,
    "src/components/profile.tsx": (
        'import { UserService } from "../services/userService";\n\n'
        "export function Profile({ svc }: { svc: UserService }) {\n"
        '  svc.load("1");\n  return null;\n}\n'
    ),
    "src/services/userService.test.ts": (
        'import { UserService } from "./userService";\n\n'
        'test("load", async () => {\n  await new UserService(client).load("1");\n});\n'
    ),
}


async def test_typescript_relative_import_and_a_class_method() -> None:
    found = analysis(TS_REPO, "src/services/userService.ts", [(8, 9)])
    [symbol] = found.changed_symbols("src/services/userService.ts")
    assert (symbol.definition.qualified, symbol.definition.start, symbol.definition.end) == (
        "UserService.load",
        7,
        10,
    )
    used = await found.resolve_used("src/services/userService.ts")
    assert resolved(used) == {
        # `this.client.fetchUser`: `client` is an ApiClient (the constructor says so).
        "fetchUser": ([("src/api/client.ts", "ApiClient.fetchUser", 5, 7)], "class"),
        "client": ([("src/api/client.ts", "ApiClient", 3, 8)], "class"),
        "normalize": ([("src/services/userService.ts", "normalize", 13, 15)], "same file"),
    }
    fetch = next(u for u in used.used if u.name == "fetchUser")
    assert fetch.definitions[0].doc == (4, 4)
    [refs] = await found.references([symbol])
    assert referencing(refs) == [
        ("src/components/profile.tsx", "code", [4]),
        ("src/services/userService.test.ts", "test", [4]),
    ]


async def test_typescript_types_through_an_import() -> None:
    found = analysis(TS_REPO, "src/services/userService.ts", [(13, 14)])
    used = resolved(await found.resolve_used("src/services/userService.ts"))
    assert used["User"] == ([("src/models/user.ts", "User", 1, 4)], "import")


async def test_typescript_path_aliases_and_star_reexports() -> None:
    """`@/components` through tsconfig.json's `paths`, then `export *` in its index."""
    page = (
        'import { Card } from "@/components";\n\n'
        "export function Page() {\n  return Card({ title: 1 });\n}\n"
    )
    repo = {
        "client/tsconfig.json": (
            '{\n  // the app\n  "compilerOptions": {\n    "baseUrl": ".",\n'
            '    "paths": { "@/*": ["./src/*"] },\n  },\n}\n'
        ),
        "client/src/components/index.ts": 'export * from "./Box";\nexport * from "./Card";\n',
        "client/src/components/Box.tsx": "export function Box() {\n  return null;\n}\n",
        "client/src/components/Card.tsx": (
            "export function Card(props: { title: number }) {\n  return null;\n}\n"
        ),
        "client/src/pages/Page.tsx": page,
    }
    found = analysis(repo, "client/src/pages/Page.tsx", [(4, 4)])
    used = resolved(await found.resolve_used("client/src/pages/Page.tsx"))
    assert used == {"Card": ([("client/src/components/Card.tsx", "Card", 1, 3)], "import")}


async def test_a_default_import_is_what_the_module_exports_as_default() -> None:
    repo = {
        "src/a.ts": "function helper() {}\n\nexport default class Widget {\n  draw() {}\n}\n",
        "src/b.ts": 'import W from "./a";\n\nexport function make() {\n  return new W();\n}\n',
    }
    found = analysis(repo, "src/b.ts", [(4, 4)])
    used = resolved(await found.resolve_used("src/b.ts"))
    assert used == {"W": ([("src/a.ts", "Widget", 3, 5)], "import")}
    # `export default Name;` at the end of the module.
    repo["src/a.ts"] = "class Widget {}\n\nfunction other() {}\n\nexport default Widget;\n"
    found = analysis(repo, "src/b.ts", [(4, 4)])
    used = resolved(await found.resolve_used("src/b.ts"))
    assert used == {"W": ([("src/a.ts", "Widget", 1, 1)], "import")}


# --- Go -----------------------------------------------------------------------------------

GO_SERVICE = """package service

import (
\t"fmt"

\t"example.com/shop/store"
)

// Service checks orders out.
type Service struct {
\trepo *store.Repo
}

// Checkout pays an order.
func (s *Service) Checkout(total float64) error {
\to := &store.Order{Total: total}
\tif err := validate(o); err != nil {
\t\treturn err
\t}
\tfmt.Println(o.Paid())
\treturn s.repo.Save(o)
}
"""
GO_REPO = {
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "store/models.go": (
        "package store\n\n// Order is a customer order.\ntype Order struct {\n"
        "\tID    int\n\tTotal float64\n}\n\n"
        "// Paid says whether it is paid.\nfunc (o *Order) Paid() bool {\n\treturn o.Total > 0\n}\n"
    ),
    "store/repo.go": (
        "package store\n\ntype Repo struct{}\n\n"
        "func (r *Repo) Save(o *Order) error {\n\treturn nil\n}\n"
    ),
    "service/service.go": GO_SERVICE,
    "service/validate.go": (
        'package service\n\nimport "example.com/shop/store"\n\n'
        "func validate(o *store.Order) error {\n\treturn nil\n}\n"
    ),
    "api/handler.go": (
        'package api\n\nimport "example.com/shop/service"\n\n'
        "func Handle(s *service.Service) error {\n\treturn s.Checkout(1)\n}\n"
    ),
    "service/service_test.go": (
        'package service\n\nimport "testing"\n\n'
        "func TestCheckout(t *testing.T) {\n\ts := &Service{}\n\t_ = s.Checkout(2)\n}\n"
    ),
}


async def test_go_same_package_call_and_an_imported_struct() -> None:
    found = analysis(GO_REPO, "service/service.go", [(16, 21)])
    [symbol] = found.changed_symbols("service/service.go")
    d = symbol.definition
    assert (d.qualified, d.kind, d.start, d.end, d.doc) == (
        "Service.Checkout",
        "method",
        15,
        22,
        (14, 14),
    )
    used = resolved(await found.resolve_used("service/service.go"))
    assert used["Order"] == ([("store/models.go", "Order", 4, 7)], "import")
    assert used["validate"] == ([("service/validate.go", "validate", 5, 7)], "package")
    # `o := &store.Order{...}` then `o.Paid()`: the method of the type the function states.
    assert used["Paid"] == ([("store/models.go", "Order.Paid", 10, 12)], "class")
    # `s.repo.Save`: the receiver is a Service, whose `repo` field is a `*store.Repo`.
    assert used["Save"] == ([("store/repo.go", "Repo.Save", 5, 7)], "class")
    assert "Println" not in used  # the standard library
    [refs] = await found.references([symbol])
    assert referencing(refs) == [
        ("api/handler.go", "code", [6]),
        ("service/service_test.go", "test", [7]),
    ]
    assert refs.files[0].sites[0].enclosing is not None
    assert refs.files[0].sites[0].enclosing.name == "Handle"


# --- Java ---------------------------------------------------------------------------------

ORDER_SERVICE = """package com.shop.service;

import com.shop.model.Order;

public class OrderService {
    public double price(Order order) {
        double total = order.getTotal();
        return PriceRules.discount(total);
    }
}
"""
JAVA_REPO = {
    "src/main/java/com/shop/model/Order.java": (
        "package com.shop.model;\n\n/** An order. */\npublic class Order {\n"
        "    private double total;\n\n"
        "    public double getTotal() {\n        return total;\n    }\n}\n"
    ),
    "src/main/java/com/shop/service/PriceRules.java": (
        "package com.shop.service;\n\nclass PriceRules {\n"
        "    static double discount(double total) {\n        return total * 0.9;\n    }\n}\n"
    ),
    "src/main/java/com/shop/service/OrderService.java": ORDER_SERVICE,
    "src/main/java/com/shop/web/OrderController.java": (
        "package com.shop.web;\n\nimport com.shop.service.OrderService;\n\n"
        "public class OrderController {\n"
        "    private final OrderService service = new OrderService();\n\n"
        "    public double show(com.shop.model.Order o) {\n"
        "        return service.price(o);\n    }\n}\n"
    ),
    "src/test/java/com/shop/service/OrderServiceTest.java": (
        "package com.shop.service;\n\nclass OrderServiceTest {\n"
        "    void prices() {\n        new OrderService().price(null);\n    }\n}\n"
    ),
}


async def test_java_imported_class_and_same_package() -> None:
    path = "src/main/java/com/shop/service/OrderService.java"
    found = analysis(JAVA_REPO, path, [(7, 8)])
    [symbol] = found.changed_symbols(path)
    assert (symbol.definition.qualified, symbol.definition.start, symbol.definition.end) == (
        "OrderService.price",
        6,
        9,
    )
    used = resolved(await found.resolve_used(path))
    model = "src/main/java/com/shop/model/Order.java"
    rules = "src/main/java/com/shop/service/PriceRules.java"
    # `Order order` in the signature types `order`: its `getTotal`.
    assert used["getTotal"] == ([(model, "Order.getTotal", 7, 9)], "class")
    # `PriceRules`, not imported: the same package.
    assert used["discount"] == ([(rules, "PriceRules.discount", 4, 6)], "class")
    [refs] = await found.references([symbol])
    assert referencing(refs) == [
        ("src/main/java/com/shop/web/OrderController.java", "code", [9]),
        ("src/test/java/com/shop/service/OrderServiceTest.java", "test", [5]),
    ]


# --- Kotlin -------------------------------------------------------------------------------

CHECKOUT_KT = """package com.shop

import com.shop.pricing.TaxTable
import com.shop.pricing.applyTax

class Checkout {
    fun total(amount: Double): Double {
        val table = TaxTable()
        return applyTax(amount) + table.rate()
    }
}
"""
KOTLIN_REPO = {
    # The file's path says nothing of its package: its `package` line does.
    "app/src/main/kotlin/Pricing.kt": (
        "package com.shop.pricing\n\nfun applyTax(x: Double): Double = x * 1.2\n\n"
        "class TaxTable {\n    fun rate(): Double = 0.2\n}\n"
    ),
    "app/src/main/kotlin/com/shop/Checkout.kt": CHECKOUT_KT,
}


async def test_kotlin_imports_by_package() -> None:
    path = "app/src/main/kotlin/com/shop/Checkout.kt"
    found = analysis(KOTLIN_REPO, path, [(8, 9)])
    [symbol] = found.changed_symbols(path)
    assert symbol.definition.qualified == "Checkout.total"
    used = resolved(await found.resolve_used(path))
    pricing = "app/src/main/kotlin/Pricing.kt"
    assert used["TaxTable"] == ([(pricing, "TaxTable", 5, 7)], "import")
    assert used["applyTax"] == ([(pricing, "applyTax", 3, 3)], "import")
    assert used["rate"] == ([(pricing, "TaxTable.rate", 6, 6)], "class")

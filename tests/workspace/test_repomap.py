"""The repository map and the context: symbols with correct lines, relevant files first, the budget respected."""

from __future__ import annotations

from pathlib import Path

from daemon.workspace.repomap import Symbol, build_context, estimate_tokens, excerpt, list_repo_files, python_symbols
from tests.workspace.conftest import write

SOURCE = '''\
import os


class Engine:
    """Runs things."""

    def run(self):
        return 1

    async def stop(self):
        pass

    class Config:
        debug = False


@decorator
def helper(x):
    def inner():
        pass
    return x
'''


def test_python_symbols_have_correct_lines() -> None:
    assert python_symbols(SOURCE) == [
        Symbol("Engine", "class", 4, 14),
        Symbol("Engine.run", "method", 7, 8),
        Symbol("Engine.stop", "method", 10, 11),
        Symbol("Engine.Config", "class", 13, 14),
        Symbol("helper", "function", 18, 21),  # the def line; nested functions are not listed
    ]


def test_a_file_with_a_syntax_error_still_gets_its_symbols() -> None:
    broken = "class Broken:\n    def ok(self):\n        return (\n\ndef after():\n    pass\n"
    assert [(s.name, s.kind, s.line) for s in python_symbols(broken)] == [
        ("Broken", "class", 1), ("ok", "method", 2), ("after", "function", 5)]


def test_the_file_list_honours_gitignore_and_skips_binaries(repo: Path) -> None:
    files = list_repo_files(repo)
    assert "shop/cart.py" in files and "tools/notes.txt" in files
    assert not {"debug.log", "tools/scratch.tmp", "assets/logo.png", "data/latin1.csv", "data/huge.txt"} & set(files)


def test_the_context_shows_the_map_and_the_relevant_files_in_full(repo: Path) -> None:
    context = build_context(repo, "The cart total is wrong when a price is missing", token_budget=4000)
    assert context.text.startswith("Repository map: 9 files")
    outline = "shop/cart.py\n  class Cart L4-12\n  def Cart.__init__ L5-6\n  def Cart.add L8-9\n  def Cart.total L11-12"
    assert outline in context.text
    assert context.included[0] == "shop/cart.py"
    assert "```python shop/cart.py\n   1| from shop.pricing import price_of\n" in context.text
    assert "  12|         return sum(price_of(n) for n in self.items)\n```" in context.text
    assert context.left_out == [] and context.text.endswith("Nothing relevant was left out.\n")
    assert context.tokens == estimate_tokens(context.text) <= 4000


def test_focus_files_come_first(repo: Path) -> None:
    context = build_context(repo, "The cart total is wrong", token_budget=4000, focus=["tools/report.py"])
    assert context.included[:2] == ["tools/report.py", "shop/cart.py"]


def test_the_budget_is_never_exceeded_and_what_did_not_fit_is_named(repo: Path) -> None:
    write(repo, "shop/catalog.py", "".join(f"def price_list_{n}(cart):\n    return {n}\n" for n in range(400)))
    for budget in (120, 400, 900, 2500):
        context = build_context(repo, "price of items in the cart", token_budget=budget)
        assert estimate_tokens(context.text) <= budget, budget
        assert context.tokens <= budget
        assert set(context.included).isdisjoint(context.left_out)
    context = build_context(repo, "price of items in the cart", token_budget=900)
    assert "shop/catalog.py" in context.left_out and "shop/catalog.py" not in context.included
    assert context.included  # smaller relevant files still fit
    assert "Left out (relevant, but did not fit the budget): " in context.text
    assert "shop/catalog.py (~" in context.text.rsplit("Left out", 1)[1]


def test_a_large_repository_map_is_trimmed_to_fit(tmp_path: Path) -> None:
    for n in range(300):
        write(tmp_path, f"pkg/module_{n:03}.py", f"def function_{n}():\n    return {n}\n")
    context = build_context(tmp_path, "function_7 returns the wrong value", token_budget=600)
    assert context.tokens <= 600
    assert "more files not listed" in context.text
    assert context.included[0] == "pkg/module_007.py"


def test_an_excerpt_holds_the_header_and_the_decorated_definitions_around_the_lines_asked_for():
    body = "".join(f"def f{i}(x):\n    return x * {i}\n\n\n" for i in range(300))
    text = ("import math\nfrom functools import cache\n\n\n" + body + "@cache\n@staticmethod\ndef target(n):\n"
            "    return math.sqrt(n)\n\n\nCONSTANT = 1\n" + body.replace("def f", "def g"))
    lines = text.split("\n")
    target, constant = lines.index("def target(n):") + 1, lines.index("CONSTANT = 1") + 1
    cut = excerpt("pkg/big.py", text, [target + 1], 800, line_numbers=True)
    assert cut.startswith(f"pkg/big.py is {len(lines) - 1} lines, too large to show whole: only lines 1-4, "
                          f"{target - 2}-{target + 1} ")
    assert f"{target - 2:>4}| @cache" in cut and f"{target + 1:>4}|     return math.sqrt(n)" in cut
    assert "   1| import math" in cut and "x * 7\n" not in cut
    window = excerpt("pkg/big.py", text, [constant], 800, line_numbers=False)  # module-level: lines around it
    assert f"only lines 1-4, {constant - 15}-{constant + 15} " in window and "\nCONSTANT = 1\n" in window
    assert estimate_tokens(cut) <= 800 and estimate_tokens(window) <= 800
    assert excerpt("pkg/big.py", text, [target], 20, line_numbers=False) == ""  # not even the definition fits


def test_a_file_too_large_for_the_budget_is_excerpted_where_the_task_names_its_definitions(tmp_path):
    body = "".join(f"def f{i}(x):\n    return x * {i}\n\n\n" for i in range(2000))
    (tmp_path / "big.py").write_text(body)
    context = build_context(tmp_path, "test_f1500 fails: assert f1500(2) == 1", 1500)
    assert context.included == ["big.py"] and context.excerpts == ["big.py"]
    assert "return x * 1500" in context.text and "return x * 1499" not in context.text
    assert build_context(tmp_path, "nothing named here", 1500).included == []  # no part is known to matter

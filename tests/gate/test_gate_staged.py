"""The index judged on its own (issue 34): a change staged with nothing changed in the
work tree (`git update-index --cacheinfo`, `--chmod`, `git add`) is judged path by path
by the rule a change to that file is judged by. What the step forbids is taken out of
the index again and recorded; what it allows stays staged. Each tool call is made as
Claude Code makes it (tests/gate/shortcuts.py): the installed hooks around a command
really run in bash. Where the command line itself would be refused, the call runs
under a line the shell reading lets by, as a script the agent wrote would."""

from __future__ import annotations

import json

import pytest

from tests.gate.runs import GateWorld
from tests.gate.shortcuts import CART, Shop, Tried

pytestmark = pytest.mark.slow

SECRET = "TOKEN = 'forged'\n"


@pytest.fixture
def shop(world: GateWorld) -> Shop:
    return Shop(world)


def unseen(shop: Shop, script: str) -> Tried:
    """A Bash call whose command line reads as `ls`, while `script` is what runs."""
    return shop.tool("Bash", {"command": "ls"}, lambda: shop.bash(script))


def staged(shop: Shop) -> str:
    """The index, entry by entry (mode, object, path), as `git ls-files -s` lists it."""
    return shop.git("ls-files", "-s")


def test_a_forbidden_file_staged_by_cacheinfo_alone_is_taken_out_of_the_index_and_recorded(
    shop: Shop,
) -> None:
    shop.world.start("plan")
    shop.prompt()
    before = staged(shop)
    blob = shop.bash("printf \"TOKEN = 'forged'\\n\" | git hash-object -w --stdin").stdout.strip()
    tried = unseen(shop, f"git update-index --add --cacheinfo 100644,{blob},src/secret.py")
    assert tried.ran is not None and tried.ran.returncode == 0, tried.ran.stderr
    assert tried.undone
    assert staged(shop) == before  # a later commit holds nothing of it
    assert not (shop.path / "src" / "secret.py").exists()  # the work tree never held it
    (violation,) = shop.violations()
    assert violation["changes"] == [
        {"what": "staged", "target": str(shop.path / "src" / "secret.py"), "change": "added"}
    ]
    assert violation["undone"] == ["src/secret.py (staged, added: taken out of the index)"]
    kept = next(ref for ref in shop.kept() if ref.endswith("/index"))
    assert shop.git("show", f"{kept}:src/secret.py") == SECRET  # kept for the person
    assert tried.post is not None and "src/secret.py" in json.loads(tried.post.stdout)["reason"]


def test_an_allowed_git_add_stays_staged_beside_a_forbidden_staging_that_is_undone(shop: Shop) -> None:
    shop.world.start("plan")  # edit:docs/plan.md allowed, src/ not
    shop.prompt()
    (shop.path / "docs" / "plan.md").write_text("# Plan\n\n1. a discount\n")
    shop.prompt()  # the person's edit: theirs
    tried = unseen(shop, "git add docs/plan.md && git update-index --chmod=+x src/cart.py")
    assert tried.undone
    listed = shop.git("diff", "--cached", "--name-only")
    assert listed == "docs/plan.md\n"  # the allowed staging stays; the mode of src/cart.py is back
    assert "100644" in shop.git("ls-files", "-s", "src/cart.py")
    (violation,) = shop.violations()
    assert [c["target"] for c in violation["changes"]] == [str(shop.path / "src" / "cart.py")]


def test_an_allowed_git_add_stays_staged_when_a_forbidden_edit_beside_it_is_put_back(shop: Shop) -> None:
    shop.world.start("plan")
    shop.prompt()
    tried = unseen(shop, "echo '# the plan' >> docs/plan.md && git add docs/plan.md && echo x > src/cart.py")
    assert tried.undone
    assert (shop.path / "src" / "cart.py").read_text() == CART
    assert shop.git("diff", "--cached", "--name-only") == "docs/plan.md\n"
    (violation,) = shop.violations()
    assert [c["what"] for c in violation["changes"]] == ["file"]


def test_an_allowed_git_add_is_no_violation(shop: Shop) -> None:
    shop.world.start("implement")
    shop.prompt()
    assert shop.write("src/cart.py", CART + "# discount\n").ran is not None
    tried = shop.shell("git add src/cart.py")
    assert tried.ran is not None and not tried.undone
    assert shop.git("diff", "--cached", "--name-only") == "src/cart.py\n"
    assert shop.violations() == []


def test_an_executable_bit_staged_on_a_protected_file_is_put_back(shop: Shop) -> None:
    shop.world.start("implement")  # edits allowed: only the protected paths are forbidden
    shop.prompt()
    before = staged(shop)
    tried = unseen(shop, "git update-index --chmod=+x .claude/settings.json")
    assert tried.ran is not None and tried.ran.returncode == 0, tried.ran.stderr
    assert tried.undone
    assert staged(shop) == before
    (violation,) = shop.violations()
    assert violation["changes"] == [
        {"what": "staged", "target": str(shop.path / ".claude" / "settings.json"), "change": "modified"}
    ]
    assert violation["undone"] == [".claude/settings.json (staged, modified: the index's entry put back)"]


def test_a_first_staging_in_a_repository_with_no_index_yet_is_judged_as_any_other(shop: Shop) -> None:
    """A repository where nothing was ever staged has no index file: the baseline's index
    is then the empty tree, so the first `git add` of a forbidden file is taken out."""
    (shop.path / ".git" / "index").unlink()  # as after `git init`, before any `git add`
    shop.world.start("plan")
    shop.prompt()
    tried = unseen(shop, "git add src/cart.py")
    assert tried.ran is not None and tried.ran.returncode == 0, tried.ran.stderr
    assert tried.undone
    assert staged(shop) == ""  # nothing staged, as before the call
    (violation,) = shop.violations()
    assert violation["changes"] == [
        {"what": "staged", "target": str(shop.path / "src" / "cart.py"), "change": "added"}
    ]
    assert violation["undone"] == ["src/cart.py (staged, added: taken out of the index)"]


def test_a_first_allowed_staging_in_a_repository_with_no_index_yet_stays_staged(shop: Shop) -> None:
    (shop.path / ".git" / "index").unlink()
    shop.world.start("plan")
    shop.prompt()
    tried = unseen(shop, "git add docs/plan.md")
    assert not tried.undone and shop.violations() == []
    assert shop.git("ls-files") == "docs/plan.md\n"

"""Finding the docs' ``sh recipe`` blocks, the shell blocks that say neither
``sh recipe`` nor ``sh norecipe``, and the session that runs the recipes
(tests/functional/test_recipes.py runs them for real, in a sandbox)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.recipes import ROOT, recipe_files, recipes, session, unmarked


def test_the_readme_recipes_are_found():
    found = recipes(ROOT / "README.md")
    assert len(found) >= 2, "README.md lost its ```sh recipe blocks (Try it on one machine)"
    first = found[0].text
    assert "neutrino-all-in-one --config-file etc/all_in_one.conf --background" in first
    assert "neutrino-instance plug" in first
    assert any("--stop" in block.text for block in found[1:])
    lines = (ROOT / "README.md").read_text().splitlines()
    for block in found:  # each block knows where it is, for the failure report
        assert lines[block.line - 1] == block.text.splitlines()[0]
        assert lines[block.line - 2] == "```sh recipe"


def test_recipe_files_are_the_readme_and_the_docs():
    files = recipe_files()
    assert files[0] == ROOT / "README.md"
    assert set(files[1:]) == set((ROOT / "docs").glob("*.md"))


def test_every_shell_block_is_a_recipe_or_says_it_is_not():
    """A shell block of the docs runs in the sandbox (```` ```sh recipe ````)
    or says that it does not (```` ```sh norecipe ````: it runs for good,
    needs several hosts, a cloud, the network): none is left out unawares."""
    left = [f"{block.name}: {block.text.splitlines()[0]}"
            for path in recipe_files() for block in unmarked(path)]
    assert not left, ("fence each as ```sh recipe (and check that it runs) or ```sh "
                      "norecipe:\n" + "\n".join(left))


MARKED = """# t

```sh recipe
echo runs
```

```sh norecipe
echo not run, on purpose
```

```ini
[DEFAULT]
```

```sh
echo says neither
```

```bash
echo another shell, neither
```

```
no language: may be shell
```

Text:

    echo indented: cannot say

    echo the same block

- a list item

    its second paragraph, not code
"""


def test_shell_blocks_that_say_neither_are_found(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(MARKED)
    found = unmarked(doc)
    assert [block.text for block in found] == [
        "echo says neither\n", "echo another shell, neither\n",
        "no language: may be shell\n",
        "echo indented: cannot say\n\necho the same block\n"]
    assert [block.line for block in found] == [16, 20, 24, 29]
    assert [block.text for block in recipes(doc)] == ["echo runs\n"]


def test_no_recipe_hides_a_failure_behind_and():
    """bash does not stop on a failing ``a`` in ``a && b`` (set -e), so a
    recipe's broken first half would pass unnoticed: one command a line."""
    for path in recipe_files():
        for block in recipes(path):
            for n, line in enumerate(block.text.splitlines()):
                assert " && " not in line, f"{path.name}:{block.line + n}: {line}"


MARKDOWN = """# t

```sh recipe
echo one
```

```sh
echo plain sh: not a recipe
```

```bash recipe
echo another language: not a recipe
```

    ```sh recipe
    an indented code block, not a fence
    ```

  ~~~~ sh   recipe
  echo two
  ```
  echo still two: a shorter or other fence does not close
  ~~~~

````sh recipe
echo last, never closed
"""


def test_only_sh_recipe_fences_are_recipes(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(MARKDOWN)
    found = recipes(doc)
    assert [block.text for block in found] == [
        "echo one\n",
        "echo two\n```\necho still two: a shorter or other fence does not close\n",
        "echo last, never closed\n"]
    assert [block.line for block in found] == [4, 20, 26]
    assert found[0].name == "doc.md:4"


def run_session(tmp_path: Path, *texts: str) -> subprocess.CompletedProcess:
    doc = tmp_path / "doc.md"
    doc.write_text("".join(f"intro\n\n```sh recipe\n{text}```\n\n" for text in texts))
    return subprocess.run(["bash", str(session(recipes(doc), tmp_path / "s"))],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)


def test_blocks_share_one_shell(tmp_path):
    done = run_session(tmp_path, "X=shared\ncd /\n", "echo $X $PWD\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "shared /\n"


def test_a_failing_command_stops_the_session_naming_its_line(tmp_path):
    done = run_session(tmp_path, "echo one\n", "echo two\nfalse\necho three\n", "echo four\n")
    assert done.returncode != 0
    assert done.stdout == "one\ntwo\n"
    assert "recipe failed: doc.md:11: false (status 1)" in done.stderr


def test_unset_variables_and_pipes_fail_too(tmp_path):
    done = run_session(tmp_path, "echo one\n", "echo $NOT_SET\n")
    assert done.returncode != 0
    assert "NOT_SET: unbound variable" in done.stderr
    assert "recipe failed: doc.md:10: the block starting here (status 1)" in done.stderr
    done = run_session(tmp_path, "false | cat\necho after\n")
    assert done.returncode != 0 and "after" not in done.stdout

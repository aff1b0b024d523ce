"""The shell recipes of the Markdown docs, as tests run them.

A recipe is a fenced code block whose info string is ``sh recipe`` (the fence
line is ```` ```sh recipe ````). The recipes of one file make one session:
they run in order in one bash, each command that fails failing it (``set
-Eeuo pipefail``; note that bash does not stop on the failure of ``a`` in
``a && b``, so recipes put one command on a line). What runs is the blocks'
text as it is: the session only adds a trap that names the block and line
that failed.

Every other shell block says that it is not a recipe, ```` ```sh norecipe ````
(it runs until stopped, or needs several hosts, a cloud or the network), so
that none is left out by mistake: ``unmarked`` finds those that say neither.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INFO = ("sh", "recipe")
#: the info string of a shell block deliberately not run
NOT_A_RECIPE = ("sh", "norecipe")
#: the languages of shell blocks: each is marked one or the other
SHELLS = frozenset({"sh", "bash", "shell", "console", "zsh"})
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
#: a line that a following indented line continues (a list item's paragraph),
#: rather than starting an indented code block after it
_CONTINUED = re.compile(r"^\s+\S|^\s*(?:[-*+]|\d+[.)])\s")
#: the session's shell options and its traps: ERR names the failing line (the
#: block's line plus bash's line in the sourced block); EXIT names the block
#: when the shell ended without ERR (an unset variable under ``set -u``)
PROLOGUE = """set -Eeuo pipefail
trap '__recipe_status=$? __recipe_at=$((__recipe_line + LINENO - 1)) __recipe_told=1
echo "recipe failed: $__recipe_file:$__recipe_at: $BASH_COMMAND \\
(status $__recipe_status)" >&2' ERR
trap '__recipe_status=$?
if [ $__recipe_status != 0 ] && [ -z "${__recipe_told:-}" ]; then
  echo "recipe failed: ${__recipe_file:-?}:${__recipe_line:-0}: the block starting here \\
(status $__recipe_status)" >&2
fi' EXIT"""


@dataclass(frozen=True)
class Block:
    path: Path
    #: the line of the file where the block's first command is (1-based)
    line: int
    text: str

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"

    def numbered(self) -> str:
        """The block with the file's line numbers, for a failure report."""
        return "\n".join(f"{self.line + n:5} | {text}"
                         for n, text in enumerate(self.text.splitlines()))


def recipe_files(root: Path = ROOT) -> list[Path]:
    """The Markdown files whose recipes are tested: README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def recipes(path: Path) -> list[Block]:
    """The recipe blocks of a Markdown file, in order."""
    return [block for info, block in code_blocks(path)
            if info is not None and tuple(info.split()) == INFO]


def unmarked(path: Path) -> list[Block]:
    """The code blocks of a Markdown file that may be shell and say neither
    ``sh recipe`` nor ``sh norecipe``: fenced ones in a shell or in no
    language, and indented ones (which cannot say: fence them)."""
    found = []
    for info, block in code_blocks(path):
        words = tuple((info or "").split())
        if info is None or (words not in (INFO, NOT_A_RECIPE)
                            and (not words or words[0] in SHELLS)):
            found.append(block)
    return found


def code_blocks(path: Path) -> list[tuple[str | None, Block]]:
    """The code blocks of a Markdown file, in order, each with its fence's info
    string (None for an indented block). CommonMark fences: up to three spaces
    before, closed by a fence of the same character at least as long; an
    unclosed block runs to the end of the file. An indented block is lines of
    four spaces or more after a blank line that does not follow a list item."""
    blocks: list[tuple[str | None, Block]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index, last = 0, ""  # last: the last line with text before this one
    while index < len(lines):
        line = lines[index]
        opening = _FENCE.match(line)
        index += 1
        if (line.startswith("    ") and line.strip() and not _CONTINUED.match(last)
                and (index == 1 or not lines[index - 2].strip())):
            first, body = index, [line[4:]]
            while index < len(lines) and (lines[index].startswith("    ")
                                          or not lines[index].strip()):
                body.append(lines[index][4:])
                index += 1
            blocks.append((None, Block(path, first, "\n".join(body).rstrip("\n") + "\n")))
            continue
        if line.strip():
            last = line
        if not opening or (opening.group(2)[0] == "`" and "`" in opening.group(3)):
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3)
        body, first = [], index + 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            index += 1
            if (closing and closing.group(2)[0] == fence[0]
                    and len(closing.group(2)) >= len(fence) and not closing.group(3).strip()):
                last = lines[index - 1]
                break
            body.append(_unindent(lines[index - 1], indent))
        blocks.append((info.strip(), Block(path, first, "\n".join(body) + "\n")))
    return blocks


def _unindent(line: str, indent: int) -> str:
    """A fenced line without the fence's indentation (at most that many spaces)."""
    stripped = len(line) - len(line.lstrip(" "))
    return line[min(indent, stripped):]


def session(blocks: list[Block], scripts: Path) -> Path:
    """Write the blocks and a bash script that sources them in order, in one
    shell; the script's path. A failure prints ``recipe failed: FILE:LINE:``
    (the line in the Markdown file), the command and its status; where bash
    gives no line (an unset variable under ``set -u``), the block's first."""
    scripts.mkdir(parents=True, exist_ok=True)
    lines = [PROLOGUE]
    for number, block in enumerate(blocks, 1):
        script = scripts / f"block-{number}.sh"
        script.write_text(block.text, encoding="utf-8")
        lines += [f"__recipe_file={shlex.quote(block.path.name)} __recipe_line={block.line}",
                  f"echo {shlex.quote(f'--- recipe {block.name}')} \"at $SECONDS s\" >&2",
                  f"source {shlex.quote(str(script))}"]
    lines.append('echo "--- recipes done at $SECONDS s" >&2')
    runner = scripts / "session.sh"
    runner.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return runner

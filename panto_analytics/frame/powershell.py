"""PowerShell commands (what a Codex shell call runs under a Windows folder), parsed by tree-sitter-powershell.

Each command of a PowerShell script, in order, with its words resolved
statically as :mod:`.shell_commands` resolves bash words (a variable, a
subexpression, a wildcard is unknown, None), whether a pipe feeds it, and the
files its redirections write; :mod:`.shell_commands` reads them through the
same table of programs.

>>> [(c.words, c.piped) for c in powershell_commands("Get-Content 'a b.md' -Tail 5 | Select-Object -First 1")]
[(['Get-Content', 'a b.md', '-Tail', '5'], False), (['Select-Object', '-First', '1'], True)]
>>> powershell_commands("if (Test-Path $p) { Get-Content $p }")[1].words
['Get-Content', None]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_powershell
from tree_sitter import Language, Node, Parser

__all__ = ["PowerShellCommand", "powershell_commands"]

_WILDCARD = re.compile(r"[*?\[$`]")


@dataclass
class PowerShellCommand:
    """A command: its name and arguments (None: unknown before it runs), whether it reads a pipe, the files its
    redirections write (None: unknown)."""

    words: list[str | None]
    piped: bool
    writes: list[str | None] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_powershell.language()))


def powershell_commands(script: str) -> list[PowerShellCommand] | None:
    """The commands of ``script`` in order; None where tree-sitter-powershell cannot parse it.

    The grammar does not read a bare argument that starts with a variable (``Get-Content $HOME\\.x\\a.json``,
    which PowerShell expands): an error inside one argument makes that argument unknown, as a variable is;
    an error anywhere else makes the script unparsed.

    >>> powershell_commands("Get-Content $HOME\\\\.x\\\\a.json")[0].words, powershell_commands("if (")
    (['Get-Content', None], None)
    """
    root = _parser().parse(script.encode("utf-8", "surrogatepass")).root_node
    if root.has_error and not all(_in_an_argument(error) for error in _errors(root)):
        return None
    out: list[PowerShellCommand] = []
    _walk(root, out)
    return out


def _errors(node: Node) -> list[Node]:
    """The nodes where the parse failed (an ``ERROR`` or a missing token) under ``node``."""
    if node.type == "ERROR" or node.is_missing:
        return [node]
    return [e for child in node.children if child.has_error or child.is_missing for e in _errors(child)]


def _in_an_argument(node: Node) -> bool:
    while node.parent is not None:
        if node.parent.type == "command_elements" and node.type not in ("command_argument_sep", "command_parameter"):
            return True
        node = node.parent
    return False


def _walk(node: Node, out: list[PowerShellCommand]) -> None:
    for child in node.named_children:
        if child.type == "pipeline_chain":
            commands = [c for c in child.named_children if c.type == "command"]
            for k, command in enumerate(commands):
                out.append(_command(command, piped=k > 0))
                _walk(command, out)             # commands inside its arguments ($(...), script blocks)
            for other in child.named_children:
                if other.type != "command":
                    _walk(other, out)
        else:
            _walk(child, out)


def _command(node: Node, piped: bool) -> PowerShellCommand:
    name = node.child_by_field_name("command_name")
    named = [c for c in node.named_children if c.type == "command_name"]
    words: list[str | None] = [_text(named[0]) if named else (None if name is None else _text(name))]
    writes: list[str | None] = []
    for elements in (c for c in node.named_children if c.type == "command_elements"):
        for element in elements.named_children:
            if element.type == "command_argument_sep":
                continue
            if element.type == "command_parameter":
                words.append(_text(element))
            elif element.type == "redirection":
                target = next((c for c in element.named_children if c.type == "redirected_file_name"), None)
                if target is not None and _text(target).lower() != "$null":
                    writes.append(_value(target))
            else:
                words.append(_value(element))
    return PowerShellCommand(words, piped, writes)


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def _value(node: Node) -> str | None:
    """An argument's text, or None where it is only known when it runs (a variable, a subexpression, a wildcard)."""
    kind = node.type
    if node.has_error:
        return None
    if kind in ("array_literal_expression", "unary_expression", "redirected_file_name", "integer_literal") \
            and len(node.named_children) == 1:
        return _value(node.named_children[0])
    if kind in ("generic_token", "decimal_integer_literal"):
        text = _text(node)
        return None if _WILDCARD.search(text) else text
    if kind == "string_literal" and len(node.named_children) == 1:
        return _value(node.named_children[0])
    if kind == "verbatim_string_characters":
        return _text(node)[1:-1].replace("''", "'")
    if kind == "expandable_string_literal":
        text = _text(node)
        return None if node.named_children or "`" in text or "$" in text else text[1:-1]
    return None

"""What a shell command reads and writes: parsed by tree-sitter-bash, each simple command looked up in a table.

The command is parsed as a shell parses it (pipelines, lists, subshells,
command and process substitution, redirections, here-documents and
here-strings, quoting, comments, background jobs), and each simple command's
words are resolved statically: a word is known when it is literal text
(quotes and escapes removed); a variable, a command substitution, a glob or a
brace expansion makes it unknown. Each simple command is then read by its
program's entry in :data:`PROGRAMS`, which declares the options that take a
value, so that ``wc -l a b`` reads ``a`` and ``b`` and ``head -n 5 a`` reads
only ``a``:

- a **reader** (``cat``, ``head``, ``sed -n``, ``jq``, ``diff``, ``grep``
  over files, ...) reads each file operand; a script or pattern operand
  (``sed``, ``awk``, ``jq``, ``grep``) is not a file. With no file operand it
  is a filter of its input (a later stage of a pipe, or fed by ``<``, a
  here-document or a here-string) and touches nothing;
- a **lister** (``ls``, ``tree``, ``find``, ``rg --files``) reads each
  folder it lists (``dir:``); ``grep -r`` and ``rg`` search (``search:``);
- a **writer** (``tee``, ``touch``, ``rm``, ``mv``, ``sed -i``, ``mkdir``,
  ``Set-Content``; ``cp`` writes its destination: its sources are copied,
  not read into the context)
  writes each operand; ``> FILE``, ``>> FILE``, ``&> FILE``, ``2> FILE`` are
  writes and ``< FILE`` a read (``/dev/null`` and ``&N`` are not files);
- ``cd DIR`` moves the folder for what follows it (not out of a subshell); ``echo``, ``printf``, ``true``, ``false``, ``:``, a test
  (``test``, ``[``, ``[[``), a variable assignment and ``export`` touch
  nothing, nor does a filter (``tr``, PowerShell's ``Select-Object``, ...)
  in a pipe;
- anything else (``pytest``, ``git``, ``python -c``, ``eval``, a variable as
  the program, an operand that is unknown, a command the grammar cannot
  parse) makes the whole command also a ``run``.

Under a Windows working directory the command is PowerShell (what Codex runs
there), parsed by tree-sitter-powershell (:mod:`.powershell`) and read
through the same table (``Get-Content``, ``Set-Content``, ``Get-ChildItem``,
``Copy-Item``, ... and their aliases); one the PowerShell grammar cannot parse
is read as bash, backslashes taken for separators.

>>> command_targets("cat 'a;b' | wc -l > out # note", "/r")
[('read', 'file:/r/a;b'), ('write', 'file:/r/out')]
>>> command_targets("sed -i '' 's|x|y|g' f && python -c 'a; b'", "/r")
[('write', 'file:/r/f'), ('run', "run:/r$ sed -i '' 's|x|y|g' f && python -c 'a; b'")]
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from ..pathnames import is_windows_path, normalize_path
from .powershell import powershell_commands

__all__ = ["PROGRAMS", "Program", "command_targets", "parse_errors", "run_target"]

#: A target: ``(kind, normalized target)``.
Target = tuple[str, str]


@dataclass(frozen=True)
class Program:
    """How a program uses its operands.

    ``does``: ``read``, ``write``, ``list`` (folders), ``copy`` (``cp``: the
    last operand, or ``-t DIR``, is written) or ``search`` (``grep``,
    ``rg``: files read, or a search of folders when recursive);
    ``valued``: the options that take values, and how many; ``script``: the
    first operand is a script or a pattern, unless one of
    ``script_options`` gives it; ``powershell``: ``-Name`` options,
    matched without case, ``path_options`` naming the file.

    >>> PROGRAMS["wc"].does, PROGRAMS["head"].valued["-n"], PROGRAMS["sed"].script
    ('read', 1, True)
    """

    does: str
    valued: dict[str, int] = field(default_factory=dict)
    script: bool = False
    script_options: frozenset[str] = frozenset()
    #: Options after which every operand is an argument, not a file (``jq --args``).
    rest_options: frozenset[str] = frozenset()
    powershell: bool = False
    path_options: frozenset[str] = frozenset()


def _valued(*names: str, two: tuple[str, ...] = ()) -> dict[str, int]:
    return {**{name: 1 for name in names}, **{name: 2 for name in two}}


_SED = Program("read", _valued("-e", "-f", "-l", "--expression", "--file", "--line-length"), script=True,
               script_options=frozenset({"-e", "-f", "--expression", "--file"}))
_AWK = Program("read", _valued("-F", "-v", "-f", "--field-separator", "--assign", "--file"), script=True,
               script_options=frozenset({"-f", "--file"}))
_GREP = Program("search", _valued("-e", "-f", "-A", "-B", "-C", "-m", "-d", "-D", "--regexp", "--file",
                                  "--after-context", "--before-context", "--context", "--max-count", "--include",
                                  "--exclude", "--exclude-dir", "--exclude-from", "--label", "--binary-files",
                                  "--devices", "--directories"),
                script=True, script_options=frozenset({"-e", "-f", "--regexp", "--file"}))
_JQ = Program("read", _valued("--indent", "-L", "-f", "--from-file",
                              two=("--arg", "--argjson", "--slurpfile", "--rawfile")),
              script=True, script_options=frozenset({"-f", "--from-file"}),
              rest_options=frozenset({"--args", "--jsonargs"}))
_GET_CONTENT = Program("read", _valued("-totalcount", "-head", "-first", "-tail", "-last", "-readcount", "-encoding",
                                       "-delimiter", "-filter", "-include", "-exclude", "-stream"),
                       powershell=True, path_options=frozenset({"-path", "-literalpath"}))
_SET_CONTENT = Program("write", _valued("-value", "-encoding", "-width", "-filter", "-include", "-exclude",
                                        "-inputobject", "-stream"),
                       powershell=True, path_options=frozenset({"-path", "-literalpath", "-filepath"}))
_HASH = Program("read", _valued("-a", "--algorithm"))
_PS_PATHS = frozenset({"-path", "-literalpath"})
_COPY_ITEM = Program("copy", _valued("-destination", "-filter", "-include", "-exclude"), powershell=True,
                     path_options=_PS_PATHS)
_MOVE_ITEM = Program("write", _valued("-destination", "-filter", "-include", "-exclude"), powershell=True,
                     path_options=_PS_PATHS)
_REMOVE_ITEM = Program("write", _valued("-filter", "-include", "-exclude"), powershell=True, path_options=_PS_PATHS)
_NEW_ITEM = Program("write", _valued("-itemtype", "-value", "-name"), powershell=True, path_options=_PS_PATHS)
_SELECT_STRING = Program("read", _valued("-pattern", "-encoding", "-context", "-include", "-exclude"),
                         script=True, script_options=frozenset({"-pattern"}), powershell=True,
                         path_options=_PS_PATHS)
_GET_CHILD_ITEM = Program("list", _valued("-filter", "-include", "-exclude", "-depth", "-attributes"),
                          powershell=True, path_options=frozenset({"-path", "-literalpath"}))

#: The programs whose operands are targets, by lower-cased name (``Get-Content`` is ``get-content``).
PROGRAMS: dict[str, Program] = {
    "cat": Program("read"),
    "head": Program("read", _valued("-n", "-c", "--lines", "--bytes")),
    "tail": Program("read", _valued("-n", "-c", "-s", "--lines", "--bytes", "--sleep-interval", "--pid",
                                    "--max-unchanged-stats")),
    "less": Program("read", _valued("-p", "-x", "-o", "-O", "-j", "-b", "-h", "-y", "-z", "-P", "-T", "-t",
                                    "--pattern")),
    "more": Program("read", _valued("-n")),
    "nl": Program("read", _valued("-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w")),
    "wc": Program("read", _valued("--files0-from")),
    "bat": Program("read", _valued("-l", "-r", "-H", "-m", "--language", "--line-range", "--highlight-line",
                                   "--style", "--theme", "--tabs", "--wrap", "--terminal-width", "--file-name",
                                   "--map-syntax")),
    "sed": _SED,
    "awk": _AWK, "gawk": _AWK, "mawk": _AWK, "nawk": _AWK,
    "jq": _JQ,
    "yq": Program("read", _valued("-o", "-I", "-p", "--output-format", "--input-format", "--indent"), script=True),
    "diff": Program("read", _valued("-U", "-C", "-F", "-I", "-L", "-x", "-X", "-S", "-W", "--label",
                                    "--ignore-matching-lines", "--exclude", "--exclude-from", "--starting-file",
                                    "--width", "--show-function-line")),
    "cmp": Program("read", _valued("-i", "-n", "--ignore-initial", "--bytes")),
    "comm": Program("read"),
    "stat": Program("read", _valued("-f", "-c", "-t", "--format", "--printf")),
    "file": Program("read", _valued("-m", "-f", "-F", "-P", "-e", "--magic-file", "--files-from", "--separator",
                                    "--exclude", "--parameter")),
    "xxd": Program("read", _valued("-c", "-g", "-l", "-s", "-o", "-n")),
    "hexdump": Program("read", _valued("-n", "-s", "-e", "-f")),
    "od": Program("read", _valued("-A", "-j", "-N", "-t", "-w", "-S")),
    "strings": Program("read", _valued("-n", "-t", "-e", "-T")),
    "md5sum": _HASH, "sha1sum": _HASH, "sha256sum": _HASH, "sha512sum": _HASH, "shasum": _HASH, "b2sum": _HASH,
    "sort": Program("read", _valued("-k", "-t", "-o", "-S", "-T", "--key", "--field-separator", "--output",
                                    "--buffer-size", "--temporary-directory", "--parallel")),
    "cut": Program("read", _valued("-d", "-f", "-b", "-c", "--delimiter", "--fields", "--bytes", "--characters",
                                   "--output-delimiter")),
    "tac": Program("read", _valued("-s", "--separator")),
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP,
    "rg": Program("search", _valued("-e", "-f", "-g", "-t", "-T", "-A", "-B", "-C", "-m", "-j", "-M", "-d", "-E",
                                    "-r", "--regexp", "--file", "--glob", "--iglob", "--type", "--type-not",
                                    "--type-add", "--type-clear", "--after-context", "--before-context",
                                    "--context", "--max-count", "--threads", "--max-columns", "--max-depth",
                                    "--maxdepth", "--encoding", "--replace", "--sort", "--sortr", "--colors",
                                    "--context-separator", "--pre", "--pre-glob", "--ignore-file",
                                    "--max-filesize", "--engine", "--path-separator"),
                  script=True, script_options=frozenset({"-e", "-f", "--regexp", "--file", "--files", "--type-list"})),
    "ls": Program("list", _valued("--ignore", "--hide", "--width", "--tabsize")),
    "tree": Program("list", _valued("-L", "-P", "-I", "-o", "-H", "-T", "--charset", "--filelimit", "--timefmt",
                                    "--sort")),
    "find": Program("list"),
    "uniq": Program("read", _valued("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars")),
    "column": Program("read", _valued("-s", "-c", "-o", "-N", "-R", "-H", "-W", "-E", "--separator",
                                      "--output-separator", "--table-columns", "--output-width")),
    "get-content": _GET_CONTENT, "gc": _GET_CONTENT,
    "get-childitem": _GET_CHILD_ITEM, "gci": _GET_CHILD_ITEM,
    "copy-item": _COPY_ITEM, "cpi": _COPY_ITEM, "move-item": _MOVE_ITEM, "mi": _MOVE_ITEM,
    "remove-item": _REMOVE_ITEM, "ri": _REMOVE_ITEM, "new-item": _NEW_ITEM, "ni": _NEW_ITEM,
    "select-string": _SELECT_STRING, "sls": _SELECT_STRING,
    "tee": Program("write"),
    "cp": Program("copy", _valued("-t", "-S", "--target-directory", "--suffix")),
    "mv": Program("write", _valued("-t", "-S", "--target-directory", "--suffix")),
    "rm": Program("write"),
    "touch": Program("write", _valued("-d", "-t", "-r", "--date", "--reference")),
    "mkdir": Program("write", _valued("-m", "--mode")),
    "set-content": _SET_CONTENT, "add-content": _SET_CONTENT, "out-file": _SET_CONTENT, "sc": _SET_CONTENT,
    "ac": _SET_CONTENT,
}
#: ``type FILE`` is PowerShell's (and cmd's) ``cat``; only under a Windows working directory (bash's ``type``
#: names a command).
_WINDOWS_PROGRAMS = {"type": _GET_CONTENT, "dir": _GET_CHILD_ITEM, "copy": _COPY_ITEM, "move": _MOVE_ITEM,
                     "del": _REMOVE_ITEM, "erase": _REMOVE_ITEM}
#: Programs that print what they were given, or test a condition, and touch nothing.
_INERT = frozenset({"echo", "printf", "true", "false", ":", "test", "[", "test-path", "write-output", "write-host",
                    "write-error", "write-warning", "join-path", "split-path"})
#: Programs that only transform their input: nothing in a pipe's later stage (or fed by a redirect), a run alone.
_FILTERS = frozenset({"tr", "select-object", "sort-object", "where-object", "foreach-object", "format-table",
                      "format-list", "out-string", "measure-object", "group-object", "select"})
#: Programs that run the rest of their words as a command, with the options that take a value.
_WRAPPERS: dict[str, dict[str, int]] = {"sudo": _valued("-u", "-g", "-C", "-D"), "nohup": {}, "time": {},
                                         "command": {}, "builtin": {}, "exec": {}, "nice": _valued("-n"),
                                         "env": _valued("-u", "-C", "--unset", "--chdir")}
#: The actions of ``find`` that do more than list.
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                           "-fls"})
#: Files that are not files (a redirect there writes nothing; also anything under ``/dev/``).
_DEVICES = frozenset({"-", "/dev/null"})
_GLOB = re.compile(r"[*?\[]")
_STATEMENT_LISTS = frozenset({"program", "list", "compound_statement", "do_group", "if_statement", "elif_clause",
                              "else_clause", "while_statement", "for_statement", "c_style_for_statement",
                              "case_statement", "case_item", "function_definition", "negated_command"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def _tree(command: str) -> Node:
    return _parser().parse(command.encode("utf-8", "surrogatepass")).root_node


#: Code points tree-sitter-bash 0.25.1 must not see: after ``{`` or ``${``, one from about U+7DE73 up crashed
#: the process (a read out of bounds, a segfault in ``Parser.parse``; the exact bound moved from run to run).
#: Planes 4 to 16 (unassigned, tags, variation selectors, private use) are shown to it as stand-ins instead.
_CRASHING = re.compile("[\U00040000-\U0010FFFF]")
#: Where the stand-ins come from: plane 3, which the grammar reads as the word characters they replace.
_STAND_INS = range(0x30000, 0x40000)


def _stand_ins(*texts: str) -> dict[int, int]:
    """A stand-in (same UTF-8 length, in none of ``texts``) for each code point of ``texts`` the parser must not
    see (:data:`_CRASHING`); empty where there is none.

    >>> {hex(k): hex(v) for k, v in _stand_ins("echo {\U000ea9b1}", "/r").items()}
    {'0xea9b1': '0x30000'}
    """
    crashing = sorted({c for text in texts for c in _CRASHING.findall(text)})
    if not crashing:
        return {}
    free = (code for code in _STAND_INS if not any(chr(code) in text for text in texts))
    return {ord(c): next(free) for c in crashing}


def parse_errors(command: str, cwd: str | None = None) -> bool:
    """Whether ``command`` cannot be parsed (it is then one ``run``): by tree-sitter-bash, or under a Windows
    folder by tree-sitter-powershell and then by tree-sitter-bash.

    >>> parse_errors("cat a | wc -l"), parse_errors("cat 'a"), parse_errors("if (Test-Path a) { 1 }", "C:/w")
    (False, True, False)
    """
    if is_windows_path(cwd) and powershell_commands(command) is not None:
        return False
    command = command.translate(_stand_ins(command))
    return _tree(command.replace("\\", "/") if is_windows_path(cwd) else command).has_error


def run_target(command: str, cwd: str | None) -> str:
    """The target of a command run: its folder and its text, whitespace collapsed.

    >>> run_target("pytest -q  tests\\n", "/r")
    'run:/r$ pytest -q tests'
    """
    return f"run:{cwd or ''}$ " + " ".join(command.split())


class _Walk:
    """The targets found so far, and whether something else ran."""

    def __init__(self, windows: bool) -> None:
        self.out: list[Target] = []
        self.other = False
        self.windows = windows

    def add(self, kind: str, prefix: str, path: str, base: str | None) -> None:
        target = (kind, prefix + normalize_path(path, base))
        if target not in self.out:
            self.out.append(target)


def command_targets(command: str, cwd: str | None) -> list[Target]:
    """What ``command`` run in ``cwd`` touches, in order, without repeats; with a ``run`` of the whole command
    when it does anything else (see the module's docstring).

    >>> command_targets("cd pkg && head -n 5 a.ts b.ts &", "/r")
    [('read', 'file:/r/pkg/a.ts'), ('read', 'file:/r/pkg/b.ts')]
    >>> command_targets("cat $(echo a)", "/r")
    [('run', 'run:/r$ cat $(echo a)')]
    >>> command_targets("cat {\U000ea9b1}.txt", "/r") == [("read", "file:/r/{\U000ea9b1}.txt")]
    True
    """
    swap = _stand_ins(command, cwd or "")
    if not swap:
        return _targets_of(command, cwd)
    back = {stand_in: code for code, stand_in in swap.items()}
    return [(kind, target.translate(back)) for kind, target in _targets_of(command.translate(swap), cwd)]


def _targets_of(command: str, cwd: str | None) -> list[Target]:
    """:func:`command_targets` of a command the parser may see whole."""
    windows = is_windows_path(cwd)
    walk = _Walk(windows)
    script = powershell_commands(command) if windows else None
    if script is not None:       # a Windows folder: PowerShell, what Codex runs there
        base = cwd
        for each in script:
            base = _simple(each.words, base, walk, each.piped, False)
            _each(walk, "write", "file:", each.writes, base)
    elif (root := _tree(command.replace("\\", "/") if windows else command)).has_error:
        walk.other = True
    else:
        _statements(root, cwd, walk, False)
    if walk.other or not walk.out:
        walk.out.append(("run", run_target(command, cwd)))
    return walk.out


def _statements(node: Node, base: str | None, walk: _Walk, fed: bool) -> str | None:
    """Walk the statements under ``node`` in order; the folder after them."""
    for child in node.named_children:
        base = _statement(child, base, walk, False, fed)
    return base


def _statement(node: Node, base: str | None, walk: _Walk, piped: bool, fed: bool) -> str | None:
    """Walk one statement; ``piped``: it reads a pipe; ``fed``: its input is redirected. The folder after it."""
    kind = node.type
    if kind == "command":
        return _command(node, base, walk, piped, fed)
    if kind == "redirected_statement":
        body, *redirects = node.named_children
        fed = fed or any(_is_input(r) for r in redirects)
        after = _statement(body, base, walk, piped, fed) if body.type not in _REDIRECTS else base
        for redirect in ([body] if body.type in _REDIRECTS else []) + redirects:
            _redirect(redirect, after, walk)
        return after
    if kind == "pipeline":
        # Each stage runs in a subshell, but the grammar reads ``cd x && a 2>&1 | b`` as ``(cd x && a 2>&1) | b``:
        # the folder is carried through the stages, as the shell's own reading (cd x && (a 2>&1 | b)) carries it.
        for k, stage in enumerate(node.named_children):
            base = _statement(stage, base, walk, piped or k > 0, fed)
        return base
    if kind == "subshell":
        _statements(node, base, walk, fed)
        return base
    if kind in _STATEMENT_LISTS:
        for child in node.named_children:
            base = _statement(child, base, walk, piped, fed)
        return base
    if kind in ("comment", "variable_name", "heredoc_body", "heredoc_start", "heredoc_end"):
        return base
    if kind in ("variable_assignment", "variable_assignments", "declaration_command", "unset_command"):
        _substitutions(node, base, walk)
        return base
    if kind in _SUBSTITUTIONS:
        _statements(node, base, walk, False)
        return base
    _substitutions(node, base, walk)
    if kind != "test_command":      # [[ -f x ]] tests; arithmetic or any other construct runs something of its own
        walk.other = True
    return base


_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})


def _is_input(redirect: Node) -> bool:
    if redirect.type in ("heredoc_redirect", "herestring_redirect"):
        return True
    return redirect.type == "file_redirect" and any(c.type in ("<", "<&") for c in redirect.children)


def _redirect(node: Node, base: str | None, walk: _Walk) -> None:
    """A redirection: ``> FILE`` (any descriptor, ``>>``, ``&>``, ``>|``) writes, ``< FILE`` reads."""
    if node.type == "heredoc_redirect":
        for inner in node.named_children:   # cat <<EOF > f: the redirect after the word
            if inner.type == "file_redirect":
                _redirect(inner, base, walk)
            elif inner.type not in ("heredoc_start", "heredoc_body", "heredoc_end", "heredoc_content"):
                base = _statement(inner, base, walk, True, True)    # cat <<EOF | head: the pipe's next stage
        return
    if node.type == "herestring_redirect":
        _substitutions(node, base, walk)
        return
    operators = [c.type for c in node.children if not c.is_named]
    destination = node.child_by_field_name("destination")
    if destination is None or any(op in (">&", "<&", "&>>") and destination.type == "number" for op in operators):
        return
    path = _word(destination, base, walk)
    if path is None:
        walk.other = True
    elif not _is_device(path):
        walk.add("read" if operators and operators[0] in ("<", "<&") and "<>" not in operators else "write",
                 "file:", path, base)


def _is_device(path: str) -> bool:
    return path in _DEVICES or path.startswith("/dev/")


def _substitutions(node: Node, base: str | None, walk: _Walk) -> None:
    """Walk the commands substituted anywhere inside ``node`` (``$(...)``, backquotes, ``<(...)``)."""
    for child in node.named_children:
        if child.type in _SUBSTITUTIONS:
            _statements(child, base, walk, False)
        else:
            _substitutions(child, base, walk)


def _word(node: Node, base: str | None, walk: _Walk) -> str | None:
    """The text of a word with quotes and escapes removed; None where it is unknown before it runs (a variable, a
    substitution (whose commands are walked), a glob, a brace expansion)."""
    kind = node.type
    text = node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""
    if kind == "word":
        if _GLOB.search(text.replace("\\*", "").replace("\\?", "").replace("\\[", "")):
            return None
        return re.sub(r"\\(.)", r"\1", text, flags=re.S) if "\\" in text else text
    if kind == "number":
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        parts = []
        for child in node.named_children:
            if child.type != "string_content":
                _word(child, base, walk)   # walks a substitution's commands
                return None
            content = child.text.decode("utf-8", "surrogateescape") if child.text is not None else ""
            parts.append(re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), content))
        return "".join(parts)
    if kind == "concatenation":
        values = [_word(child, base, walk) for child in node.named_children]
        if any(v is None for v in values) or (values[:1] == ["{"] and values[-1:] == ["}"]):
            return None
        return "".join(v for v in values if v is not None)
    if kind in _SUBSTITUTIONS:
        _statements(node, base, walk, False)
        # <(cmd) is a pipe bash names /dev/fd/N (its command walked above); $(cmd) text not known before it runs
        return "/dev/fd/63" if kind == "process_substitution" else None
    _substitutions(node, base, walk)
    return None


def _command(node: Node, base: str | None, walk: _Walk, piped: bool, fed: bool) -> str | None:
    """A simple command: its words looked up in the program table; the folder after it (``cd``)."""
    words: list[str | None] = []
    redirects = []
    for child in node.named_children:
        if child.type == "variable_assignment":
            _substitutions(child, base, walk)
        elif child.type in _REDIRECTS:
            redirects.append(child)
        elif child.type == "command_name":
            words.extend(_word(c, base, walk) for c in child.named_children)
        elif child.type != "comment":
            words.append(_word(child, base, walk))
    fed = fed or any(_is_input(r) for r in redirects)
    after = _simple(words, base, walk, piped, fed)
    for redirect in redirects:
        _redirect(redirect, base, walk)
    return after


def _unwrapped(words: list[str | None]) -> list[str | None]:
    """The words of the command a wrapper (``sudo``, ``env``, ``time``, ...) runs."""
    while words and words[0] is not None and (name := _program_name(words[0])) in _WRAPPERS:
        valued = _WRAPPERS[name]
        i = 1
        while i < len(words) and (w := words[i]) is not None and (w.startswith("-") or (name == "env" and "=" in w)):
            i += 1 + valued.get(w, 0)
        words = words[i:]
    return words


def _program_name(word: str) -> str:
    return word[word.rfind("/") + 1:].lower()


def _simple(words: list[str | None], base: str | None, walk: _Walk, piped: bool, fed: bool) -> str | None:
    words = _unwrapped(words)
    if not words:
        return base
    if words[0] is None:
        walk.other = True          # a variable or a substitution as the program
        return base
    name = _program_name(words[0])
    args = words[1:]
    if name in ("cd", "set-location", "sl", "chdir"):
        return _cd(args, base, walk)
    if name in _INERT or (name in _FILTERS and (piped or fed)):
        return base
    program = PROGRAMS.get(name) or (_WINDOWS_PROGRAMS.get(name) if walk.windows else None)
    if program is None:
        walk.other = True
        return base
    _HANDLERS.get(name, _operands_of)(name, program, args, base, walk, piped or fed)
    return base


def _cd(args: list[str | None], base: str | None, walk: _Walk) -> str | None:
    operands = [a for a in args if a is None or not (a.startswith("-") and a != "-")]
    if not operands:
        return "~"
    if len(operands) > 1 or operands[0] is None or operands[0] == "-":
        walk.other = True
        return base
    return normalize_path(operands[0], base)


@dataclass
class _Parsed:
    """A command's options (name and values, in order) and operands (None: unknown)."""

    options: list[tuple[str, list[str | None]]]
    operands: list[str | None]

    def given(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str | None]:
        return [v for name, values in self.options if name in names for v in values]


def parse_options(program: Program, args: list[str | None]) -> _Parsed:
    """``args`` split into options and operands as ``getopt_long`` does, with ``program``'s valued options.

    >>> parse_options(PROGRAMS["head"], ["-n5", "-q", "a", "--", "-b"])
    _Parsed(options=[('-n', ['5']), ('-q', [])], operands=['a', '-b'])
    """
    options: list[tuple[str, list[str | None]]] = []
    operands: list[str | None] = []
    i, ended = 0, False
    while i < len(args):
        word = args[i]
        i += 1
        if word is None or ended or word == "-" or not word.startswith("-") or len(word) < 2:
            operands.append(word)
            continue
        if word == "--":
            ended = True
            continue
        if program.powershell or word.startswith("--"):
            name, equals, value = word.partition("=") if not program.powershell else (word.lower(), "", "")
            if equals:
                options.append((name, [value]))
                continue
            n = program.valued.get(name, 1 if name in program.path_options else 0)
            options.append((name, args[i:i + n]))
            i += n
            ended = ended or name in program.rest_options
            continue
        for k in range(1, len(word)):
            name = "-" + word[k]
            n = program.valued.get(name, 0)
            if n:
                rest = word[k + 1:]
                values = ([rest] if rest else []) + args[i:i + n - bool(rest)]
                i += n - bool(rest)
                options.append((name, values))
                break
            options.append((name, []))
    return _Parsed(options, operands)


def _operands_of(name: str, program: Program, args: list[str | None], base: str | None, walk: _Walk,
                 filtering: bool) -> None:
    """A reader, writer or lister: each operand (past a script or pattern) is a target."""
    parsed = parse_options(program, args)
    operands = parsed.operands
    if program.rest_options and parsed.given(*program.rest_options):
        operands = operands[:1]                     # jq FILTER --args a b: a and b are arguments
    if program.script and not parsed.given(*program.script_options):
        operands = operands[1:]                     # the script or the pattern
    if name in ("head", "tail", "more"):
        operands = [w for w in operands if w is None or not w.startswith("+")]
    operands = parsed.values(*program.path_options) + [w for w in operands if w != "-"]
    if program.does == "list":
        _each(walk, "read", "dir:", operands or ["."], base)
    elif program.does == "copy":
        destination = parsed.values("-t", "--target-directory", "-destination")
        if not destination and len(operands) < 2:
            walk.other = True
            return
        # Its sources are copied, not read into the context: unknown ones make it a run, known ones are no target.
        if any(w is None for w in (operands if destination else operands[:-1])):
            walk.other = True
        _each(walk, "write", "file:", destination or operands[-1:], base)
    elif program.does == "write":
        # Set-Content PATH VALUE, New-Item PATH: the first operand; mv, Move-Item: sources and destination
        written = operands[:1] if program in (_SET_CONTENT, _NEW_ITEM) else \
            operands + parsed.values("-t", "--target-directory", "-destination")
        _each(walk, "write", "dir:" if name == "mkdir" else "file:", written, base)
        if not written:
            walk.other = True
    elif operands:
        _each(walk, "read", "file:", operands, base)
    elif not filtering:
        walk.other = True                          # reads what it was not given: the terminal


def _each(walk: _Walk, kind: str, prefix: str, paths: list[str | None], base: str | None) -> None:
    for path in paths:
        if path is None:
            walk.other = True
        elif not _is_device(path):
            walk.add(kind, prefix, path, base)


def _sed(name: str, program: Program, args: list[str | None], base: str | None, walk: _Walk, filtering: bool) -> None:
    """``sed -i`` (GNU ``-i``, ``-iSUFFIX``, ``--in-place``; BSD ``-i ''``, ``-i SUFFIX``) writes its files."""
    kept: list[str | None] = []
    in_place = False
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word is None or not (word.startswith("--in-place") or (word[:1] == "-" and _is_in_place(word))):
            kept.append(word)
            continue
        in_place = True
        if word == "-i" and i < len(args) and args[i] is not None and (args[i] == "" or str(args[i])[:1] == "."):
            i += 1                                  # BSD's suffix, given as its own word ('' for none)
        flags = word[1:word.index("i")] if not word.startswith("--") else ""
        if flags:
            kept.append("-" + flags)                # -Ei: -E stays
    if not in_place:
        _operands_of(name, program, kept, base, walk, filtering)
        return
    parsed = parse_options(program, kept)
    files = parsed.operands if parsed.given(*program.script_options) else parsed.operands[1:]
    _each(walk, "write", "file:", files, base)
    if not files:
        walk.other = True


def _is_in_place(word: str) -> bool:
    """Whether a short-option word of ``sed`` holds ``-i`` (``-i``, ``-i.bak``, ``-Ei``, ``-ni``), not the value
    of ``-e``/``-f``/``-l`` before it."""
    for letter in word[1:]:
        if letter == "i":
            return True
        if letter in "efl":
            return False
    return False


def _search(name: str, program: Program, args: list[str | None], base: str | None, walk: _Walk,
            filtering: bool) -> None:
    """``grep PATTERN FILE...`` reads the files; ``grep -r`` and ``rg`` search folders (``search:TOOL:PATTERN@DIR``,
    as the Grep tool's search); ``rg --files DIR`` lists it."""
    parsed = parse_options(program, args)
    if name == "rg" and parsed.given("--files"):
        _each(walk, "read", "dir:", parsed.operands or ["."], base)
        return
    given = parsed.values("-e", "--regexp")
    pattern = given[0] if given else parsed.operands[0] if parsed.operands else None
    paths = parsed.operands if given or parsed.given("-f", "--file") else parsed.operands[1:]
    recursive = name == "rg" or parsed.given("-r", "-R", "--recursive", "--dereference-recursive")
    if not recursive or (filtering and not paths):
        if paths:
            _each(walk, "read", "file:", paths, base)
        elif not filtering:
            walk.other = True
        return
    if pattern is None or any(p is None for p in paths):
        walk.other = True
        return
    for path in paths or ["."]:
        walk.add("read", f"search:{'rg' if name == 'rg' else 'grep'}:{pattern}@", str(path), base)


def _find(name: str, program: Program, args: list[str | None], base: str | None, walk: _Walk,
          filtering: bool) -> None:
    """``find [-H|-L|-P] PATH... EXPRESSION``: a listing of each path; an action (``-exec``, ``-delete``) runs too."""
    words = args
    while words and words[0] in ("-H", "-L", "-P"):
        words = words[1:]
    paths: list[str | None] = []
    for k, word in enumerate(words):
        if word is not None and (word.startswith("-") or word in ("(", "!", ")")):
            words = words[k:]
            break
        paths.append(word)
    else:
        words = []
    if any(w in _FIND_ACTIONS for w in words):
        walk.other = True
    _each(walk, "read", "dir:", paths or ["."], base)


_Handler = Callable[[str, Program, list[str | None], str | None, _Walk, bool], None]
_HANDLERS: dict[str, _Handler] = {"sed": _sed, "grep": _search, "egrep": _search, "fgrep": _search, "rg": _search,
                                  "find": _find}


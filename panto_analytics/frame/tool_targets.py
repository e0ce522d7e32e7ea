"""What each tool call touches: its targets, normalized and hashed, and the size of its result.

A tool call *references* one or more targets: a file it reads or writes, a
search it runs, a shell command, a URL. At ingest every tool call becomes one
or more entries of the message frame's ``refs`` column (on the assistant
message that made the call), each a ``(call, key, kind, tokens)`` struct:

- ``call``: the call's position among the message's tool calls;
- ``key``: a 64-bit hash (BLAKE2b, first 8 bytes, little-endian) of the
  normalized target, so no text is kept;
- ``kind``: ``read`` (reading a file, listing, searching), ``write``
  (editing, writing, patching, a shell redirect), ``run`` (a shell command,
  normalized), ``fetch`` (a URL or a web search) or ``other`` (a call that
  touches nothing: a todo list, a subagent, a question to the user; its key
  is the tool's name, and it is never an orphan);
- ``file``: whether the target is a file (not a listing, a search, a
  command or a URL): what an agent can restore after its compaction;
- ``tokens``: the size of the call's result, ``ceil(words * 1.3)`` of the
  tool result with the call's id (libpanto's word estimate), null when the
  recording has no result for it.

The normalization (``docs/loss.md``):

- file paths are made absolute against the call's working directory (a
  shell call's own ``workdir``, a Claude Code record's ``cwd``, else the
  session's; ``cd DIR`` inside a command for what follows), then normalized
  (``.``, ``..``, repeated and trailing separators; Windows paths get
  forward slashes). ``~`` is left as written.
- line ranges (``offset``/``limit``, ``sed -n 1,80p``, ``head -n``) are
  dropped: a target is a file, so a read of lines 1-100 and a read of lines
  200-300 after a compaction re-fetch the same file, and an edit (which has
  no range) is a write of the same target as the read before it.
- a shell command is parsed by :mod:`.shell_commands` (tree-sitter-bash):
  files read and written, folders listed, searches; ``apply_patch`` writes
  the files its patch names; a command with anything else is also one
  ``run`` of the whole command (whitespace collapsed, prefixed by its
  directory).
- a key is the hash of the target's text: ``file:PATH``, ``dir:PATH``,
  ``search:TOOL:PATTERN@DIR``, ``run:CWD$ COMMAND``, ``url:URL``,
  ``web:QUERY``, ``tool:NAME`` (``docs/loss.md`` states each).

>>> [(k, t) for k, t in targets("Read", '{"file_path": "src/a.py", "offset": 10}', "/repo")]
[('read', 'file:/repo/src/a.py')]
>>> targets("bash", '{"command": "cd pkg && cat a.ts | head -5"}', "/repo")
[('read', 'file:/repo/pkg/a.ts')]
>>> key_of("file:/repo/src/a.py") == key_of("file:/repo/src/a.py"), key_of("x") < 2**64
(True, True)
"""
from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..pathnames import normalize_path
from .schema import REF_KINDS, REF_STRUCT, REFERENCE_SCHEMA, SEQ, SESSION
from .shell_commands import command_targets
from .words import MEDIA_PART_WORDS, count_words_arrow

__all__ = [
    "REF_KINDS", "file_key", "is_file_tool", "is_lookup", "is_write", "key_of", "normalize_path", "references",
    "refs_column", "result_tokens", "shell_targets", "targets",
]

#: libpanto's words-to-tokens factor (``messageTokenEstimate``'s fallback).
_WORD_TOKENS = 1.3

# -- what a tool's name says it does (lower-cased, so Claude Code's ``Read`` and pi's ``read`` are one) --------

_READ_TOOLS = frozenset({"read", "read_file", "view", "view_file", "open_file", "cat"})
_WRITE_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit", "write_file", "edit_file", "create_file",
                          "str_replace_editor", "str_replace_based_edit_tool", "replace", "insert"})
#: Listing a folder, by name (``ls``) or by a pattern (Claude Code's ``Glob``, pi's ``find``): a read of the folder.
_LIST_TOOLS = frozenset({"ls", "list", "list_dir", "list_directory", "read_folder", "glob", "find"})
_SEARCH_TOOLS = frozenset({"grep", "search", "search_files", "grep_search", "file_search", "rg"})
_SHELL_TOOLS = frozenset({"bash", "shell", "shell_command", "exec_command", "local_shell", "run_shell_command",
                          "run_terminal_cmd", "terminal", "powershell"})
_FETCH_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "read_url", "open_url"})
_WEB_SEARCH_TOOLS = frozenset({"websearch", "web_search", "google_web_search", "search_query"})
_PATH_FIELDS = ("file_path", "path", "notebook_path", "filePath", "absolute_path", "filename", "file")

_APPLY_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M)
#: Codex's code-mode ``exec`` tool: JavaScript that calls ``tools.NAME({json})``.
_JS_TOOL_CALL = re.compile(r"tools\.(\w+)\(")


def key_of(target: str) -> int:
    """The 64-bit key of a normalized target: the first 8 bytes of its BLAKE2b digest, little-endian.

    Stable across processes, platforms and library versions (Polars' own hash is not).

    >>> key_of("file:/a")
    6675673868126107620
    """
    return int.from_bytes(hashlib.blake2b(target.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def is_file_tool(name: str) -> bool:
    """Whether a tool is one of the agent's own file tools (Claude Code's Read, Edit, MultiEdit, Write,
    NotebookEdit; pi's read, edit, write; ...), not a shell: the files Claude Code restores after a compaction are
    those its file tools read or wrote (its ``readFileState``), never what a Bash command printed.

    >>> is_file_tool("Read"), is_file_tool("NotebookEdit"), is_file_tool("Bash")
    (True, True, False)
    """
    tool = name.lower()
    return tool in _READ_TOOLS or tool in _WRITE_TOOLS


def file_key(path: str, cwd: str | None = None) -> int:
    """The key of a file, as a Read of ``path`` in ``cwd`` gives it (what a recorded restoration names).

    >>> file_key("/r/./a.py") == key_of("file:/r/a.py")
    True
    """
    return key_of(_file(path, cwd))


def _file(path: str, cwd: str | None) -> str:
    return "file:" + normalize_path(path, cwd)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def targets(name: str, input_text: str | None, cwd: str | None) -> list[tuple[str, str]]:
    """The ``(kind, normalized target)`` pairs one tool call references, in order, without repeats.

    ``name`` is the tool's name, ``input_text`` its input as the canonical
    block holds it (JSON text, or a freeform patch), ``cwd`` the session's
    working directory.

    >>> targets("Edit", '{"file_path": "/r/a.py", "old_string": "x"}', "/r")
    [('write', 'file:/r/a.py')]
    >>> targets("Grep", '{"pattern": "TODO", "path": "src"}', "/r")
    [('read', 'search:grep:TODO@/r/src')]
    >>> targets("TodoWrite", '{"todos": []}', "/r")
    [('other', 'tool:todowrite')]
    """
    out: list[tuple[str, str]] = []
    for pair in _targets(name, input_text or "", cwd):
        if pair not in out:
            out.append(pair)
    return out or [("other", "tool:" + name.lower())]


def _targets(name: str, text: str, cwd: str | None) -> Iterator[tuple[str, str]]:
    tool = name.lower()
    if tool == "apply_patch":
        args = _json(text)
        given = args.get("input") if isinstance(args, dict) else None
        patch = given if isinstance(given, str) else text
        yield from _patch_targets(patch, cwd)
        return
    if tool == "exec" and "tools." in text:
        yield from _code_mode_targets(text, cwd)
        return
    args = _json(text)
    if not isinstance(args, dict):
        if tool in _SHELL_TOOLS and text:
            yield from shell_targets(text, cwd)
        return
    if tool in _SHELL_TOOLS:
        workdir = _string(args.get("workdir")) or _string(args.get("working_directory")) or _string(args.get("cwd"))
        base = normalize_path(workdir, cwd) if workdir else cwd
        command = args.get("command", args.get("cmd"))
        if isinstance(command, list) and all(isinstance(c, str) for c in command):
            command = _unwrap(command)
        if isinstance(command, str) and command:
            yield from shell_targets(command, base)
        return
    if tool in _READ_TOOLS or tool in _WRITE_TOOLS:
        path = next((p for f in _PATH_FIELDS if (p := _string(args.get(f)))), None)
        if path is not None:
            yield ("read" if tool in _READ_TOOLS else "write"), _file(path, cwd)
        for edit in args.get("edits") or () if tool == "multiedit" else ():
            if isinstance(edit, dict) and (path := _string(edit.get("file_path"))):
                yield "write", _file(path, cwd)
        return
    if tool in _LIST_TOOLS:
        yield "read", "dir:" + normalize_path(_string(args.get("path")) or _string(args.get("dir_path")) or ".", cwd)
        return
    if tool in _SEARCH_TOOLS:
        pattern = _string(args.get("pattern")) or _string(args.get("query")) or _string(args.get("regex")) or ""
        where = normalize_path(_string(args.get("path")) or ".", cwd)
        extra = "".join(f" {k}={args[k]}" for k in ("glob", "type", "include") if _string(args.get(k)))
        yield "read", f"search:{tool}:{pattern}{extra}@{where}"
        return
    if tool in _FETCH_TOOLS:
        url = _string(args.get("url")) or _string(args.get("uri"))
        if url:
            yield "fetch", "url:" + url.strip()
        return
    if tool in _WEB_SEARCH_TOOLS:
        query = _string(args.get("query")) or _string(args.get("q"))
        action = args.get("action")
        within = action if isinstance(action, dict) else args
        query = query or _string(within.get("query")) or _string(within.get("url"))
        if query:
            yield "fetch", "web:" + _collapsed(query)
        return
    if tool == "web__run" or tool == "web_run":
        for ref in args.get("open") or ():
            if isinstance(ref, dict) and (url := _string(ref.get("ref_id"))):
                yield "fetch", "url:" + url.strip()
        for ref in (args.get("click") or []) + (args.get("find") or []):
            if isinstance(ref, dict) and (page := _string(ref.get("ref_id"))):
                link = ref.get("id")
                yield "fetch", "url:" + page + ("" if link is None else f"#{link}")
        for query in args.get("search_query") or ():
            if isinstance(query, dict) and (q := _string(query.get("q"))):
                yield "fetch", "web:" + _collapsed(q)


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _unwrap(argv: list[str]) -> str:
    """A command given as argv: ``bash -lc SCRIPT`` is SCRIPT, anything else its words joined."""
    if len(argv) >= 3 and posixpath.basename(argv[0]) in ("bash", "sh", "zsh", "powershell", "pwsh") \
            and argv[1] in ("-c", "-lc", "-Command", "-command"):
        return argv[2]
    return shlex.join(argv)


def _patch_targets(patch: str, cwd: str | None) -> Iterator[tuple[str, str]]:
    for added, moved in _APPLY_PATCH_FILE.findall(patch):
        yield "write", _file(added or moved, cwd)


def _code_mode_targets(code: str, cwd: str | None) -> Iterator[tuple[str, str]]:
    """Codex's ``exec`` (JavaScript): each ``tools.NAME({...})`` call it makes, mapped as that tool's call."""
    if "tools.apply_patch(" in code and "*** Begin Patch" in code:   # the patch held in a variable
        yield from _patch_targets(code, cwd)
    decoder_end = len(code)
    for match in _JS_TOOL_CALL.finditer(code):
        start = match.end()
        if start >= decoder_end or code[start] != "{":
            continue
        try:
            args, _ = _raw_decode(code[start:])
        except ValueError:
            continue
        yield from _targets(match.group(1), orjson.dumps(args).decode(), cwd)


def _raw_decode(text: str) -> tuple[Any, int]:
    import json

    return json.JSONDecoder().raw_decode(text)


def shell_targets(command: str, cwd: str | None) -> list[tuple[str, str]]:
    """What a shell command references (:func:`.shell_commands.command_targets`); a patch given to
    ``apply_patch`` in it: the files the patch names.

    >>> shell_targets("sed -n '1,80p' src/a.py", "/r")
    [('read', 'file:/r/src/a.py')]
    >>> shell_targets("pytest -q  tests", "/r")
    [('run', 'run:/r$ pytest -q tests')]
    >>> shell_targets("echo hi > out.txt", "/r")
    [('write', 'file:/r/out.txt')]
    """
    if "*** Begin Patch" in command:
        return list(_patch_targets(command, cwd))
    return command_targets(command, cwd)


def _collapsed(text: str) -> str:
    """``text`` stripped, each run of whitespace one space (what ``\\s+`` matches: ``str.split``'s whitespace).

    >>> _collapsed(" a \\t\\n b\\u3000c ")
    'a b c'
    """
    return " ".join(text.split())


# -- the ``refs`` column, from canonical blocks ----------------------------------------------------------


def result_tokens(words: pl.Expr | str = "words") -> pl.Expr:
    """``ceil(words * 1.3)``: libpanto's estimate of a result's tokens from its words.

    >>> pl.DataFrame({"words": [0, 1, 10]}).select(result_tokens()).to_series().to_list()
    [0, 2, 13]
    """
    col = pl.col(words) if isinstance(words, str) else words
    return (col.cast(pl.Float64) * _WORD_TOKENS).ceil().cast(pl.UInt32)


def refs_column(blocks: pa.StructArray, owner: np.ndarray, n: int, scope: np.ndarray,
                cwds: list[str | None], result_words: np.ndarray | None = None,
                block_cwds: pa.Array | None = None) -> pl.Series:
    """The ``refs`` column of ``n`` messages from their canonical blocks.

    ``blocks`` holds canonical blocks (:data:`~panto_analytics.formats.columnar.BLOCK`),
    ``owner`` the message of each (``n`` or more: a dropped block),
    ``scope`` the file (session) of each message: a result answers the call
    with its id in the same scope; ``cwds`` the working directory of each
    scope. Every reader (the line-by-line :class:`FrameBuilder` and the
    columnar fast paths) builds the column here, so they agree.
    ``result_words``, when the caller counted them already, holds the words
    of each tool-result block of the ``n`` messages, in block order.
    ``block_cwds``, where the recording gives each call its own working
    directory (Claude Code's per-record ``cwd``), holds it for each block
    (null or empty: the scope's).

    Built in array operations but for one Python call of :func:`targets` per
    distinct (name, input, working directory): the distinct calls are found
    by their dictionary codes, each call's answer by a sorted search of
    (scope, id) codes, and the column is assembled as one Arrow list array.

    >>> from panto_analytics.formats.blocks import BLOCK
    >>> calls = pa.array([{"type": "tool_use", "id": "c1", "name": "read", "input": '{"path": "a.py"}'},
    ...                   {"type": "tool_result", "tool_use_id": "c1", "parts": [{"type": "text", "text": "x y z"}]}],
    ...                  type=BLOCK)
    >>> refs_column(calls, np.array([1, 2]), 3, np.zeros(3, np.int64), ["/r"]).to_list()[1] == [
    ...     {"call": 0, "key": key_of("file:/r/a.py"), "kind": "read", "file": True, "file_tool": True, "tokens": 4}]
    True
    """
    scope = np.asarray(scope, dtype=np.int64)  # its codes are multiplied below: 32 bits would wrap into another's
    kinds = blocks.field("type")
    inside = owner < n
    calls_at = np.flatnonzero(_is(kinds, "tool_use") & inside)
    if not len(calls_at):
        return pl.Series("refs", [None] * n, dtype=pl.List(REF_STRUCT))
    # The calls grouped by message (a stable sort: in block order within one), each numbered in its message.
    by_message = np.argsort(owner[calls_at], kind="stable")
    calls_at = calls_at[by_message]
    call_owner = owner[calls_at]
    call_scope = scope[call_owner]
    opens = np.ones(len(calls_at), dtype=bool)
    opens[1:] = call_owner[1:] != call_owner[:-1]
    call = np.arange(len(calls_at)) - np.maximum.accumulate(np.where(opens, np.arange(len(calls_at)), 0))
    take = pa.array(calls_at)
    names, inputs = (pc.dictionary_encode(blocks.field(f).take(take), null_encoding="encode") for f in ("name", "input"))
    # A call repeated in the same directory (a re-read, the same test run) is resolved once: the distinct
    # (name, input, cwd) by their codes, and only those go through Python.
    call_cwds = _call_cwds(cwds, call_scope, None if block_cwds is None else block_cwds.take(take))
    cwd_of = _codes(call_cwds)
    name_cwd = np.unique(_codes(names) * len(call_cwds.dictionary) + cwd_of, return_inverse=True)[1]
    _, first, group = np.unique(name_cwd * len(inputs.dictionary) + _codes(inputs), return_index=True,
                                return_inverse=True)
    found_keys: list[int] = []
    found_kinds: list[int] = []
    found_files: list[bool] = []
    found_tools: list[bool] = []
    found = np.zeros(len(first) + 1, dtype=np.int64)   # where each distinct call's targets start
    for g, (name, text, cwd) in enumerate(zip(names.dictionary.take(names.indices.take(first)).to_pylist(),
                                               inputs.dictionary.take(inputs.indices.take(first)).to_pylist(),
                                               call_cwds.dictionary.take(call_cwds.indices.take(first)).to_pylist())):
        pairs = targets(name or "", text, cwd)
        found[g + 1] = found[g] + len(pairs)
        for kind, target in pairs:
            found_keys.append(key_of(target))
            found_kinds.append(_KIND_CODES[kind])
            found_files.append(target.startswith("file:"))
            found_tools.append(is_file_tool(name or ""))
    # Each call's targets, in call order (and so by message), taken from its distinct call's.
    per_call = np.diff(found)[group]
    row_call = np.repeat(np.arange(len(calls_at)), per_call)
    ends = np.cumsum(per_call)
    at = np.arange(int(ends[-1])) - np.repeat(ends - per_call, per_call) + np.repeat(found[:-1][group], per_call)
    words = _answers(blocks, owner, n, scope, call_scope, calls_at, result_words)
    tokens = pl.Series("words", words).fill_nan(None).to_frame().select(result_tokens()).to_series()
    refs = pa.StructArray.from_arrays([
        pl.Series(call[row_call]).cast(pl.UInt16).to_arrow(),
        pa.array(np.array(found_keys, dtype=np.uint64)[at]),
        _KIND_ARRAY.take(pa.array(np.array(found_kinds, dtype=np.int8)[at])),
        pa.array(np.array(found_files, dtype=bool)[at]),
        pa.array(np.array(found_tools, dtype=bool)[at]),
        tokens.gather(row_call).to_arrow(),
    ], names=list(REF_STRUCT.to_schema()))
    # Every call has a target (a call that touches nothing is the tool's own): a message's refs are its calls'.
    per_message = np.bincount(call_owner, weights=per_call, minlength=n).astype(np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_message, out=offsets[1:])
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), refs, mask=pa.array(per_message == 0))
    return pl.Series("refs", lists).cast(pl.List(REF_STRUCT))


def _call_cwds(cwds: list[str | None], call_scope: np.ndarray, own: pa.Array | None) -> pa.DictionaryArray:
    """Each call's working directory, dictionary-encoded (nulls a value): its own where it has one, else its
    scope's."""
    scoped = pa.array(cwds, pa.string()).take(pa.array(call_scope))
    if own is not None:
        own = own.cast(pa.string())
        scoped = pc.if_else(pc.fill_null(pc.not_equal(own, ""), False), own, scoped)
    return pc.dictionary_encode(scoped, null_encoding="encode")


_KIND_CODES = {kind: k for k, kind in enumerate(REF_KINDS)}
_KIND_ARRAY = pa.array(REF_KINDS, pa.string())


def _is(values: pa.Array, value: str) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.equal(values, value), False))


def _codes(encoded: pa.DictionaryArray) -> np.ndarray:
    """The dictionary codes of an array encoded with its nulls as a value."""
    return np.asarray(encoded.indices).astype(np.int64)


def _answers(blocks: pa.StructArray, owner: np.ndarray, n: int, scope: np.ndarray, call_scope: np.ndarray,
             calls_at: np.ndarray, result_words: np.ndarray | None) -> np.ndarray:
    """The words of the first tool result of the ``n`` messages with each call's id in its scope; NaN for none
    (and for a call without an id)."""
    results_at = np.flatnonzero(_is(blocks.field("type"), "tool_result") & (owner < n))
    words = _result_words(blocks, results_at) if result_words is None else result_words
    ids = pc.dictionary_encode(pa.concat_arrays([blocks.field("id").take(pa.array(calls_at)).cast(pa.string()),
                                                 blocks.field("tool_use_id").take(pa.array(results_at)).cast(pa.string())]))
    code = np.asarray(pc.fill_null(ids.indices, -1)).astype(np.int64)
    key = np.concatenate([call_scope, scope[owner[results_at]]]) * (len(ids.dictionary) + 1) + code
    named = code >= 0
    call_key, call_named = key[:len(calls_at)], named[:len(calls_at)]
    answer_key, first = np.unique(key[len(calls_at):][named[len(calls_at):]], return_index=True)
    answer_words = words[named[len(calls_at):]][first]
    out = np.full(len(calls_at), np.nan)
    if len(answer_key):
        at = np.minimum(np.searchsorted(answer_key, call_key), len(answer_key) - 1)
        hit = call_named & (answer_key[at] == call_key)
        out[hit] = answer_words[at[hit]]
    return out


def _result_words(blocks: pa.StructArray, at: np.ndarray) -> np.ndarray:
    """libpanto's words of each tool result block at ``at``: text parts by words, media parts 800."""
    parts_list = blocks.field("parts").take(pa.array(at))
    parts = parts_list.flatten()
    words = np.zeros(len(at), dtype=np.int64)
    if len(parts):
        is_media = np.asarray(pc.fill_null(pc.equal(parts.field("type"), "media"), False))
        part_words = np.where(is_media, MEDIA_PART_WORDS, count_words_arrow(parts.field("text")))
        words += np.bincount(pc.list_parent_indices(parts_list).to_numpy(), weights=part_words,
                             minlength=len(at)).astype(np.int64)
    return words


# -- the references table and its expressions ---------------------------------------------------------------


def is_write(kind: pl.Expr | str = "kind") -> pl.Expr:
    """Whether a reference writes its target."""
    return (pl.col(kind) if isinstance(kind, str) else kind) == "write"


def is_lookup(kind: pl.Expr | str = "kind") -> pl.Expr:
    """Whether a reference fetches its target's content into the context (a read, a run, a fetch)."""
    return (pl.col(kind) if isinstance(kind, str) else kind).is_in(["read", "run", "fetch"])


def references(messages: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The references table of a message frame: what every tool call touched.

    Parameters
    ----------
    messages
        A message frame (its ``refs`` column, filled at ingest).

    Returns
    -------
    pl.LazyFrame
        :data:`~panto_analytics.frame.schema.REFERENCE_SCHEMA`: one row per
        (session, message, call, target), in session and call order; ``call``
        numbers the session's tool calls from 0.

    Examples
    --------
    >>> import panto_analytics as pa
    >>> references(pa.examples.messages()).collect().columns
    ['session_id', 'seq', 'call', 'key', 'kind', 'file', 'file_tool', 'tokens']
    """
    lf = messages.lazy()
    calls = (lf.select(SESSION, SEQ, "refs").filter(pl.col("refs").list.len() > 0)
             .explode("refs").unnest("refs").rename({"call": "at"}))
    order = pl.col(SEQ).cast(pl.Int64) * 65536 + pl.col("at").cast(pl.Int64)
    return (calls.with_columns(call=(order.rank("dense").over(SESSION) - 1).cast(pl.UInt32))
            .select(list(REFERENCE_SCHEMA)).cast(REFERENCE_SCHEMA))  # type: ignore[arg-type]

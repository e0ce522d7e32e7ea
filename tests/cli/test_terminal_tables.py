"""Every table command at a terminal of 80 and 120 columns: its key columns show, the table fits, and what was
left out is named (issue 32, item 2). Run through the console script under a pseudo-terminal, as a user runs it."""
from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from importlib.metadata import entry_points

import pytest
from conftest import DATA

(ENTRY,) = entry_points(group="console_scripts", name="panto-analytics")

#: command line -> the columns its table must show at any width
TABLES = {
    "cost data --by session": ["session_id", "cost_usd"],
    "cost data --by model": ["model", "cost_usd"],
    "sweep data": ["budget", "kept_tokens_p10", "kept_tokens_p50", "kept_tokens_p90"],
    "splits data -b 20k": ["session_id", "budget", "kept_turns", "kept_tokens"],
    "sessions data": ["session_id", "model", "messages", "api_calls"],
    "sessions data --budget 20k --worst 3": ["session_id", "last_turn_share", "kept_turns", "kept_tokens"],
    "replay data -w 64k -b 8k,20k": ["budget", "compactions_mean", "kept_tokens_p50"],
    "replay data -w 64k -b 8k --loss": ["budget", "orphan_rate"],
    "compactions data -b 20k": ["session", "anchor", "agent_tokens", "turns@20k", "tokens@20k"],
    "policy-cuts data": ["policy", "exact", "distance_messages_p50"],
    "loss data": ["source_format", "cut", "orphan_rate", "precision", "recall"],
    "recommend data": ["budget", "keeps_k_share", "choice"],
    "recommend data -k 200 -p 1.0 -b 0:20k:9": ["budget", "keeps_k_share", "choice"],
}


def at_terminal(args: list[str], columns: int, cache) -> str:
    """What the console script prints to a pseudo-terminal ``columns`` wide (stdout and stderr)."""
    module, _, attr = ENTRY.value.partition(":")
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"PANTO_ANALYTICS_CACHE": str(cache)}
    process = subprocess.Popen([sys.executable, "-c", f"import sys; from {module} import {attr}; sys.exit({attr}())",
                                *args, "-q"], stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                               cwd=DATA.parent)
    os.close(terminal)
    out = b""
    while True:
        ready, _, _ = select.select([controller], [], [])
        try:
            chunk = os.read(controller, 1 << 16) if ready else b""
        except OSError:   # the terminal's other end closed: the command ended
            break
        if not chunk:
            break
        out += chunk
    process.wait()
    os.close(controller)
    return out.decode().replace("\r\n", "\n")


def header(text: str) -> list[str]:
    """The column names of the first table drawn in ``text``."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┌"))
    return [cell.strip() for cell in lines[top + 1].strip("│").split("┆")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", sorted(TABLES))
def test_a_table_at_a_terminal_keeps_its_key_columns_and_fits(command, columns, cache):
    text = at_terminal(command.split(), columns, cache)
    shown = header(text)
    assert all(key in shown for key in TABLES[command]), (shown, text[-1500:])
    assert "" not in shown   # every column has a name
    table = [line for line in text.splitlines() if line[:1] in "┌│╞└"]
    assert max(map(len, table)) <= columns, text
    if "not shown to fit the terminal" in text:   # what was left out is named
        said = text.split("not shown to fit the terminal: ")[1].split(";")[0].split(", ")
        assert said and not set(said) & set(shown)
    if any("…" in line for line in table):   # shortened session ids: a unique prefix of 8 characters or more
        first = [line.strip("│").split("┆")[0].strip() for line in table if "…" in line]
        assert all(len(cell) >= 9 for cell in first)


def test_recommend_shows_the_rows_around_the_nearest_budget_when_none_meets_the_rule(cache):
    text = at_terminal("recommend data -k 200 -p 1.0 -b 0:20k:9".split(), 120, cache)
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert "no budget tried meets the rule" in text
    assert len(rows) == 1 + 3 and "<- nearest" in rows[-1] and "20,000" in rows[-1], text   # the header, 3 rows

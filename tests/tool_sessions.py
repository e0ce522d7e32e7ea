"""Small sessions with tool calls, written as canonical JSONL, for the references and loss tests."""
from __future__ import annotations

import json


def pi_session(tmp_path):
    """A pi-like canonical session: reads, a compaction that keeps the last read, then a re-read and an edit."""
    def call(i, tool, args):
        return {"type": "message", "role": "assistant", "usage": {"input": 1000 * (i + 1), "output": 10},
                "content": [{"type": "tool_use", "id": f"c{i}", "name": tool, "input": json.dumps(args)}]}

    def result(i):
        return {"type": "message", "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "parts": [{"type": "text", "text": "x"}]}]}

    lines = [{"type": "session", "id": "p"}, {"type": "message", "role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i, (tool, args) in enumerate([("read", {"path": "/r/a"}), ("read", {"path": "/r/b"})]):
        lines += [call(i, tool, args), result(i)]
    lines.append({"type": "message", "role": "user", "content": [{"type": "compaction_summary", "text": "sum"}]})
    for i, (tool, args) in enumerate([("read", {"path": "/r/a"}), ("edit", {"path": "/r/c"})], start=2):
        lines += [call(i, tool, args), result(i)]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path

"""Resident memory of a read, measured in a fresh process: bytes per message, and the peak against the frame.

A read's memory is what stays resident with what it returns (the message
frame, the parsed files and their metadata) and the peak on the way. Both
are measured in a child process, so that nothing the parent already holds
(an earlier read, a warm allocator) hides or inflates them:

- **resident bytes per message**: RSS after the read (its result alive)
  minus RSS after the imports, over the number of messages (goal for Claude
  Code: at most 200 bytes);
- **peak / frame**: the peak RSS above the imports over the frame's
  ``estimated_size`` (goal for a cached re-read: at most 1.5x).

``estimated_size`` leaves out the strings of the frame's Categorical columns
(``session_id``, ``file``, ``model``), which Polars keeps in a process-wide
mapping; ``category_bytes`` is the size of those distinct strings. It
matters when sessions are short: for 30,000 files of two messages, 1.4 MB
of strings beside a 3.3 MB frame, and building their mapping alone raised
RSS by about 8 MiB (measured).

RSS is read from ``/proc/self/statm`` and the peak from ``VmHWM`` in
``/proc/self/status`` (Linux; ``ru_maxrss`` would keep the parent's peak
across ``exec``); elsewhere the section says it is not available. No figure here is a test.

RSS also counts the pages of the shared libraries a process has mapped
(Polars' alone maps about 130 MiB), each page from the first time it is
used. Those are the library's code and constants, shared with every other
process and reclaimable, and the same whatever the size of the read: a
cached re-read of 10 files raised RSS by about 41 MiB, 35 MiB of it
file-backed (``RssFile``). So, by default, the child pages in every file
it has mapped before it takes its base (``MADV_POPULATE_READ``, Linux 5.14),
and the figures are the read's own memory; ``libraries_at_base=False``
measures as before, library pages included.

>>> resident([], None)["available"] in (True, False)
True
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

__all__ = ["resident"]

_CHILD = """import gc, json, os, sys
from panto_analytics.ingest import parallel
if json.loads(sys.argv[4]):
    parallel.launch(method=json.loads(sys.argv[4]))  # first thing, as the command line does: the read parses there
import polars as pl
from panto_analytics.ingest import read_files

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def peak_rss():  # VmHWM: this process image's own peak (ru_maxrss keeps the parent's across exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

def page_in_libraries():  # every file mapped so far (the libraries imported), paged in: RSS then grows by the read
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps") as f:
        maps = [line.split() for line in f]
    for parts in maps:
        if len(parts) >= 6 and parts[5].startswith("/") and parts[1].startswith("r"):
            start, end = (int(x, 16) for x in parts[0].split("-"))
            libc.madvise(start, end - start, 22)  # MADV_POPULATE_READ; an older kernel refuses it (EINVAL)

paths, cache, libraries_at_base = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
if libraries_at_base:
    page_in_libraries()
base = rss()
peak_before = peak_rss()
read = read_files(paths, cache=cache)
gc.collect()
after = rss()
peak = peak_rss()
frame = read.messages
categorical = [name for name, dtype in frame.schema.items() if dtype == pl.Categorical]  # after the figures are taken
strings = sum(frame[name].unique().cast(pl.String).str.len_bytes().sum() or 0 for name in categorical)
print(json.dumps({"messages": frame.height, "hits": read.cache.hits if read.cache else None,
                  "frame_bytes": frame.estimated_size(), "category_bytes": strings,
                  "base": base, "after": after, "peak": peak, "peak_before": peak_before}))
"""


def resident(paths: list[Path], cache: str | Path | None = None, *, libraries_at_base: bool = True,
             launch: bool | str = False) -> dict:
    """Memory figures of ``read_files(paths, cache=cache)`` in a fresh process (a filled cache: a re-read).

    ``peak_over_frame`` is meaningful only when the read raised the peak
    (``peak`` above the peak before it); otherwise it is None.
    ``libraries_at_base``: page in the libraries' mapped files before the
    base is taken, so that their pages are not counted as the read's (see
    the module docstring); False: count them, as the first measurements did.
    ``launch``: start the parsing workers first, as the command line does
    (``parallel.launch``; True: forked, as by default, or ``"fork"`` or
    ``"spawn"``): the figures are then those of the process that holds the
    frames, not of those that parsed.
    """
    if not Path("/proc/self/statm").exists():
        return {"available": False, "note": "not available: no /proc/self/statm"}
    names = [str(p) for p in paths]
    args = [sys.executable, "-c", _CHILD, orjson.dumps(names).decode(),
            orjson.dumps(None if cache is None else str(cache)).decode(), orjson.dumps(libraries_at_base).decode(),
            orjson.dumps("fork" if launch is True else launch or None).decode()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent),
                                                                    os.environ.get("PYTHONPATH")) if p)}
    try:
        out = subprocess.run(args, capture_output=True, check=True, timeout=900, env=env)
        m = orjson.loads(out.stdout.splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        return {"available": False, "note": f"not available: the child failed ({e})"}
    n = max(m["messages"], 1)
    raised = m["peak"] > m["peak_before"]
    return {"available": True, "messages": m["messages"], "cache_hits": m["hits"], "frame_bytes": m["frame_bytes"],
            "resident_bytes_per_message": (m["after"] - m["base"]) / n,
            "frame_bytes_per_message": m["frame_bytes"] / n, "category_bytes": m["category_bytes"],
            "peak_over_frame": (m["peak"] - m["base"]) / max(m["frame_bytes"], 1) if raised else None}

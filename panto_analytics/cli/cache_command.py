"""``cache info|clear``: where the cache of parsed files is, what it holds, and clearing it."""
from __future__ import annotations

from pathlib import Path

import click

from ..phrases import counted
from .app import main

__all__ = ["cache", "cache_clear", "cache_info"]


def _cache_option(fn):
    return click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        envvar="PANTO_ANALYTICS_CACHE", show_envvar=True,
                        help="The cache folder [default: ~/.cache/panto_analytics, or under $XDG_CACHE_HOME].")(fn)


@main.group()
def cache():
    """The Parquet cache of parsed session files.

    Every command that reads sessions keeps one file of Parquet per session
    file it parsed, in a per-user folder (--cache DIR to choose another,
    --no-cache to do without). A file unchanged since (same path, size and
    modification time, same panto_analytics parser) is read from the cache.
    """


@cache.command("info")
@_cache_option
def cache_info(cache_dir):
    """Where the cache is and what it holds."""
    from ..ingest.cache import Cache, default_cache_dir

    info = Cache(cache_dir or default_cache_dir()).info()
    rows = [("cache", info["root"]), ("entries", f"{info['entries']:,}"), ("packs", f"{info['packs']:,}"),
            ("size", f"{info['bytes'] / 1e6:.1f} MB"), ("parser version", info["parser_version"])]
    if info["temporaries"]:
        rows.append(("unfinished writes", f"{info['temporaries']:,} (removed by 'cache clear')"))
    for k, v in rows:
        click.echo(f"{k:<18}{v}")


@cache.command("clear")
@_cache_option
def cache_clear(cache_dir):
    """Delete every file the cache wrote (and nothing else)."""
    from ..ingest.cache import Cache, default_cache_dir

    c = Cache(cache_dir or default_cache_dir())
    n, size = c.clear()
    click.echo(f"removed {counted(n, 'file')}, {size / 1e6:.1f} MB, from {c.root}")

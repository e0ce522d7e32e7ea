"""Choosing sessions the way users of ccusage and claude-code-log do: by date, project, model, subagent.

A :class:`SessionFilter` is a predicate over the sessions table
(:data:`~panto_analytics.frame.schema.SESSIONS_SCHEMA`); :func:`filter_corpus` keeps
the sessions it accepts in every table of a corpus::

    corpus = pa.ingest.read_corpus("~/.claude/projects")
    recent = pa.ingest.filter_corpus(corpus, SessionFilter.parse(since="2026-11-01", subagents=False))

Rules:

- ``since`` / ``until`` apply to the session's first timestamp. A date
  (``2026-11-01``) means the whole day in UTC, on both ends; a datetime without
  an offset is UTC. A session without any timestamp fails a date filter.
- ``projects``: the session's ``project`` equals one of them, or its last path
  component does, or its Claude Code folder name does (``/home/me/app`` is
  ``app`` and ``-home-me-app``), whatever the case.
- ``models``: the normalized model equals one of them, normalized the same way
  (``claude-opus-4-5`` matches ``claude-opus-4-5-20251101``), or the raw name does,
  whatever the case.
- ``subagents=False`` keeps main sessions only.

>>> import polars as pl
>>> from datetime import datetime, timezone
>>> t = pl.DataFrame({"session_id": ["a", "b"], "project": ["/home/me/app", None], "model": ["m", "m"],
...     "model_raw": ["m", "m"], "is_subagent": [False, True],
...     "first_timestamp": [datetime(2026, 11, 2, tzinfo=timezone.utc), None]})
>>> t.filter(SessionFilter.parse(project=["app"]).expr())["session_id"].to_list()
['a']
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta

import polars as pl

from ..frame.schema import SESSION
from ..models import normalized_model
from .corpus import Corpus

__all__ = ["SessionFilter", "filter_corpus", "parse_when"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMPACT_DATE = re.compile(r"^\d{8}$")  # ccusage's --since 20250101


def parse_when(text: str, *, end: bool = False) -> datetime:
    """A ``--since``/``--until`` value as a UTC datetime; a date is its day's start (or, ``end``, the next day's).

    Parameters
    ----------
    text
        ``YYYY-MM-DD``, ``YYYYMMDD`` or an ISO 8601 datetime (UTC unless it has an offset).
    end
        Whether this is an upper bound: a date then covers its whole day.

    Returns
    -------
    datetime
        Timezone-aware, in UTC. :class:`ValueError` says what is accepted.

    Examples
    --------
    >>> parse_when("2026-11-01"), parse_when("20261101", end=True)
    (datetime.datetime(2026, 11, 1, 0, 0, tzinfo=datetime.timezone.utc), datetime.datetime(2026, 11, 2, 0, 0, tzinfo=datetime.timezone.utc))
    >>> parse_when("2026-11-01T09:30+01:00")
    datetime.datetime(2026, 11, 1, 8, 30, tzinfo=datetime.timezone.utc)
    """
    text = text.strip()
    try:
        if _DATE.match(text) or _COMPACT_DATE.match(text):
            day = date.fromisoformat(text if "-" in text else f"{text[:4]}-{text[4:6]}-{text[6:]}")
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1) if end else start
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date (YYYY-MM-DD, YYYYMMDD) or an ISO datetime (2026-11-01T09:30)") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to keep; the default keeps every session.

    ``until`` is exclusive when it came from a date (the day after it), inclusive otherwise.
    """

    since: datetime | None = None
    until: datetime | None = None
    until_inclusive: bool = True
    projects: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    subagents: bool = True
    #: How the filter was written, for messages (``--since 2026-11-01``).
    described: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, *, since: str | None = None, until: str | None = None, project: Iterable[str] = (),
              model: Iterable[str] = (), subagents: bool = True) -> SessionFilter:
        """A filter from command-line style values (see :func:`parse_when` for dates).

        >>> SessionFilter.parse(until="2026-11-01").until
        datetime.datetime(2026, 11, 2, 0, 0, tzinfo=datetime.timezone.utc)
        """
        projects, models = tuple(project), tuple(model)
        described = tuple(
            [f"--since {since}"] * (since is not None) + [f"--until {until}"] * (until is not None)
            + [f"--project {p}" for p in projects] + [f"--model {m}" for m in models]
            + ["--no-subagents"] * (not subagents))
        until_date = until is not None and bool(_DATE.match(until.strip()) or _COMPACT_DATE.match(until.strip()))
        return cls(since=None if since is None else parse_when(since),
                   until=None if until is None else parse_when(until, end=True),
                   until_inclusive=not until_date, projects=projects, models=models, subagents=subagents,
                   described=described)

    @property
    def active(self) -> bool:
        """Whether it can reject a session."""
        return bool(self.since or self.until or self.projects or self.models or not self.subagents)

    def expr(self) -> pl.Expr:
        """The predicate over the sessions table (``project``, ``model``, ``model_raw``, ``is_subagent``,
        ``first_timestamp``); nulls fail every test that looks at them."""
        keep = pl.lit(True)
        first = pl.col("first_timestamp")
        if self.since is not None:
            keep &= (first >= self.since).fill_null(False)
        if self.until is not None:
            keep &= ((first <= self.until) if self.until_inclusive else (first < self.until)).fill_null(False)
        if self.projects:
            project = pl.col("project")
            names = pl.concat_list(project, project.str.replace(r"^.*[/\\]", ""),
                                   project.str.replace_all(r"[^A-Za-z0-9]", "-")).list.eval(pl.element().str.to_lowercase())
            wanted = [p.lower() for p in self.projects]
            keep &= names.list.eval(pl.element().is_in(wanted)).list.any().fill_null(False)
        if self.models:
            raw = [m.lower() for m in self.models]
            wanted = pl.DataFrame({"m": raw}).select(normalized_model("m"))["m"].str.to_lowercase().to_list()
            keep &= (pl.col("model").str.to_lowercase().is_in(wanted)
                     | pl.col("model_raw").str.to_lowercase().is_in(raw)).fill_null(False)
        if not self.subagents:
            keep &= ~pl.col("is_subagent")
        return keep

    def what_exists(self, sessions: pl.DataFrame, *, most: int = 10) -> str:
        """What ``sessions`` hold of what this filter looks at, for the message when it keeps none.

        The span of first timestamps for a date filter, the projects and the models (``most`` of each, by
        sessions), and the subagents, each only when the filter asks about it.

        >>> t = pl.DataFrame({"model": ["a", "b", "a"], "project": [None, None, None]})
        >>> SessionFilter.parse(model=["c"], project=["x"]).what_exists(t)
        'projects: none recorded; models: a (2 sessions), b (1 session)'
        """
        said = []
        if self.since is not None or self.until is not None:
            first = sessions["first_timestamp"].drop_nulls()
            said.append("no session has a timestamp" if first.is_empty() else
                        "sessions began {} to {}".format(*first.dt.strftime("%Y-%m-%d").sort().gather([0, -1])))
        for wanted, column, what in ((self.projects, "project", "projects"), (self.models, "model", "models")):
            if wanted:
                counts = (sessions[column].drop_nulls().value_counts(sort=True, name="n")
                          .sort(["n", column], descending=[True, False]))
                if counts.is_empty():
                    said.append(f"{what}: none recorded")
                    continue
                named = [f"{v} ({_sessions(n)})" for v, n in counts.head(most).iter_rows()]
                more = f", and {counts.height - most} more" if counts.height > most else ""
                said.append(f"{what}: {', '.join(named)}{more}")
        if not self.subagents:
            said.append(f"subagents: {_sessions(int(sessions['is_subagent'].sum()))} of {sessions.height}")
        return "; ".join(said)


def _sessions(n: int) -> str:
    return f"{n:,} session" if n == 1 else f"{n:,} sessions"


def filter_corpus(corpus: Corpus, session_filter: SessionFilter) -> Corpus:
    """The corpus with only the sessions ``session_filter`` accepts, in every table.

    Parameters
    ----------
    corpus
        What :func:`~panto_analytics.ingest.corpus.read_corpus` returned.
    session_filter
        Which sessions to keep.

    Returns
    -------
    Corpus
        The same kind of corpus; its report is the original one (what was read).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for sid, day in (("old", "2026-01-05"), ("new", "2026-11-05")):
    ...     _ = (d / f"{sid}.jsonl").write_text(
    ...         f'{{"type":"session","id":"{sid}","created_at":"{day}T10:00:00Z"}}\\n'
    ...         '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> from panto_analytics.ingest.corpus import read_corpus
    >>> corpus = read_corpus(d)
    >>> filter_corpus(corpus, SessionFilter.parse(since="2026-11-01")).sessions["session_id"].to_list()
    ['new']
    """
    if not session_filter.active:
        return corpus
    sessions = corpus.sessions.filter(session_filter.expr())
    kept = sessions.select(SESSION)

    def keep(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(kept, on=SESSION, how="semi", maintain_order="left")

    return replace(corpus, sessions=sessions, messages=keep(corpus.messages), compactions=keep(corpus.compactions))

"""The sections of a dataset's report on the compactions the agents recorded: :func:`recorded_dataset`
gathers, task by task, what the in-memory report computes of its whole corpus
(:mod:`panto_analytics.analysis.report.build`): what the agents kept beside libpanto
(:func:`~panto_analytics.analysis.compactions.agent_vs_libpanto`), the loss at each cut and its calibration
curve (:func:`~panto_analytics.outcomes.recorded_refetch.calibration`), and each policy's cut beside the
agents' (:func:`~panto_analytics.analysis.compactions.policies_vs_agents`).

Each of them is measured on its own session, so a task reads the messages of its sessions with a recorded
compaction only, with one exception: a pseudo-cut sits where a quiet session reaches a context size at which
any session of its agent recorded a compaction, so the pseudo-cuts are placed in a second pass, at the sizes
the first found over the whole dataset (as ``loss DS`` does, :mod:`panto_analytics.dataset._refetch`). The
rows come back one task at a time and are put in the in-memory order: the tasks in bucket order, each
compaction numbered by its row in the dataset's compactions table, the cuts sorted by session, position and
size (recorded ones first), the policies' rows policy after policy. Memory holds those rows: one per
recorded compaction (and budget, or policy); not the sessions' messages. The cuts' rows (one per cut and the
calibration curve's ``horizon`` rows per cut) are kept only while there are at most
:data:`~panto_analytics.analysis.report.model.RECORDED_ROWS` cuts in all: each task also gives their
:class:`~panto_analytics.outcomes.recorded_refetch.CalibrationSummary` (counts and sums), and past that
many only the summaries are kept, merged as they come (:attr:`Recorded.loss`), the report's loss section then
drawn from them as the in-memory report draws it of its cuts. What the agents kept and the policies' cuts come
with their counts (:func:`~panto_analytics.analysis.compactions.kept_counts`,
:func:`~panto_analytics.analysis.compactions.cut_counts`), merged as the tasks finish; their rows are kept only
while they are at most :data:`~panto_analytics.analysis.report.model.RECORDED_ROWS` compactions, past which the
report shows the counts' summary and this process holds no row of them (:class:`_Kept`); every row of what the
agents kept is spilled as it comes and streamed to the report's file (``rows_to``).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..analysis.compactions import agent_vs_libpanto, compactions_counted, cut_counts, kept_counts, merged_counts, policies_vs_agents
from ..analysis.report import model
from ..errors import IngestReport
from ..frame.schema import SESSION
from ..frame.tool_targets import references
from ..ingest.corpus import Corpus
from ..outcomes.recorded_refetch import (
    CalibrationSummary,
    calibration_partial,
    cut_rows,
    measure_cuts,
    merge_calibration,
    pseudo_cuts,
    recorded_cut_rows,
    refetch_curve,
)
from .engines import map_buckets
from .spill import Spill
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["Recorded", "recorded_dataset"]

#: The order of the cuts over the whole corpus (:func:`~panto_analytics.outcomes.recorded_refetch.all_cuts`).
_CUT_ORDER = [SESSION, "after_seq", "context"]


@dataclass(frozen=True)
class Recorded:
    """What :func:`recorded_dataset` returns, each as the in-memory report computes it of the whole corpus
    (None without a recorded compaction): ``agent_rows`` (``agent_vs_libpanto``), ``cuts`` and ``curve``
    (``calibration``; None past :data:`~panto_analytics.analysis.report.model.RECORDED_ROWS` cuts),
    ``policy_rows`` (``policies_vs_agents``; None without policies), and ``loss``: the cuts' summary
    (:func:`~panto_analytics.outcomes.recorded_refetch.calibration_partial` of them all, merged task by task).
    ``agent_rows`` and ``policy_rows`` are None past ``RECORDED_ROWS`` compactions; their counts are there
    whenever there is a recorded compaction (with policies, for theirs): ``agent_counts``
    (:func:`~panto_analytics.analysis.compactions.kept_counts`), ``policy_counts``
    (:func:`~panto_analytics.analysis.compactions.cut_counts`); ``agent_file``: the Parquet file of every row
    of what the agents kept, where ``rows_to`` asked for one."""

    agent_rows: pl.DataFrame | None
    cuts: pl.DataFrame | None
    curve: pl.DataFrame | None
    policy_rows: pl.DataFrame | None
    loss: CalibrationSummary | None = None
    agent_counts: pl.DataFrame | None = None
    policy_counts: pl.DataFrame | None = None
    agent_file: Path | None = None


def _of(root: str, parts: list[str], ids: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The messages and the session rows of the sessions ``ids`` in ``parts``."""
    wanted = pl.col(SESSION).cast(pl.String).is_in(ids.cast(pl.String).implode())
    return (collect(scan_parts(root, "messages", parts).filter(wanted), root),
            collect(scan_parts(root, "sessions", parts).filter(wanted), root))


def _measured(messages: pl.DataFrame, cuts: pl.DataFrame,
              horizon: int) -> tuple[pl.DataFrame, pl.DataFrame, CalibrationSummary]:
    """``cuts`` measured (:func:`measure_cuts`), their curve (:func:`refetch_curve`, ``_cut``: the row) and
    their summary (:func:`calibration_partial`)."""
    refs = references(messages).collect()
    measured, curve = measure_cuts(refs, cuts, horizon=horizon), refetch_curve(refs, cuts, horizon=horizon)
    return measured, curve, calibration_partial(measured, curve)


@dataclass(frozen=True)
class _Part:
    """One task's rows: ``first`` (its first part, which orders the tasks), its recorded ``compactions`` (a
    count, to number them over the dataset), ``agent`` (``agent_vs_libpanto``), ``cuts`` measured with their
    ``curve``, their ``loss`` summary (:func:`calibration_partial`) and the distinct ``sizes`` (``source_format``,
    ``context``) of its recorded cuts, and ``policies`` (``policies_vs_agents``); None where the task has none
    (``policies`` where they are more than the report shows a row each of); ``agent_counts`` and
    ``policy_counts``: the counts of ``agent`` and ``policies``."""

    first: str
    compactions: int = 0
    agent: pl.DataFrame | None = None
    cuts: pl.DataFrame | None = None
    curve: pl.DataFrame | None = None
    policies: pl.DataFrame | None = None
    loss: CalibrationSummary | None = None
    sizes: pl.DataFrame | None = None
    agent_counts: pl.DataFrame | None = None
    policy_counts: pl.DataFrame | None = None


def _recorded_task(root: str, parts: list[str], *, budgets: list[int], horizon: int,
                   policies: Sequence[str], keep_rows: int) -> _Part:
    """Pass 1 of one group of buckets: its recorded compactions (their count, to number them over the dataset),
    what the agents kept beside libpanto, the cuts measured with their curve, and each policy's cut; the rows of
    what the agents kept (written to the report's file) and of the policies' cuts with their counts, the
    policies' rows only up to ``keep_rows`` compactions (past it the report shows the counts' summary)."""
    compactions = collect(scan_parts(root, "compactions", parts), root)
    first = parts[0] if parts else ""
    if compactions.is_empty():
        return _Part(first)
    messages, sessions = _of(root, parts, compactions[SESSION].unique())
    corpus = Corpus(messages, sessions, compactions, IngestReport())
    cuts, curve, loss = _measured(messages, recorded_cut_rows(messages, compactions, sessions).collect(), horizon)
    agent = agent_vs_libpanto(corpus, budgets)
    policy = policies_vs_agents(corpus, list(policies)) if policies else None
    policy_counts = cut_counts(policy) if policy is not None else None
    return _Part(first, compactions.height, agent, cuts, curve, _up_to(policy, policy_counts, keep_rows), loss,
                 _sizes(cuts), kept_counts(agent), policy_counts)


def _up_to(rows: pl.DataFrame | None, counts: pl.DataFrame | None, limit: int) -> pl.DataFrame | None:
    """``rows``, or None where their ``counts`` count more than ``limit`` compactions."""
    return rows if counts is not None and compactions_counted(counts) <= limit else None


@dataclass
class _Kept:
    """One kind of the tasks' rows (what the agents kept, or the policies' cuts) as they come: their counts
    merged, and the rows themselves (by the task's first part) only while the counts count at most ``limit``
    compactions; past it, never again (``rows`` None): what this holds then is the counts, bounded by the
    values they count, not the compactions."""

    limit: int
    counts: pl.DataFrame | None = None
    rows: list[tuple[str, pl.DataFrame]] | None = field(default_factory=list)

    def add(self, first: str, rows: pl.DataFrame | None, counts: pl.DataFrame | None) -> None:
        if counts is None:
            return
        self.counts = counts if self.counts is None else merged_counts([self.counts, counts])
        if self.rows is not None and (rows is None or compactions_counted(self.counts) > self.limit):
            self.rows = None  # past the limit: the summary is shown, these rows are not needed
        elif self.rows is not None and rows is not None:
            self.rows.append((first, rows))

    def in_order(self) -> list[tuple[str, pl.DataFrame]] | None:
        """The rows kept, in the tasks' order (by first part); None past the limit."""
        return None if self.rows is None else sorted(self.rows, key=lambda r: r[0])


def _folded(found: Iterator[_Part], kept: _Kept, cut: _Kept, spill: Spill | None, came: list[str]) -> Iterator[_Part]:
    """The tasks' parts as they come (their first parts appended to ``came``), what the agents kept and the
    policies' cuts folded into ``kept`` and ``cut`` (and the agents' rows appended to ``spill``, the task's
    first part beside them) and dropped."""
    for f in found:
        came.append(f.first)
        kept.add(f.first, f.agent, f.agent_counts)
        cut.add(f.first, f.policies, f.policy_counts)
        if spill is not None and f.agent is not None:  # every row, to the report's file, a task's at a time
            spill.append("agent", f.agent.with_columns(_first=pl.lit(f.first, pl.String)))
        yield dataclasses.replace(f, agent=None, policies=None, agent_counts=None, policy_counts=None)


def _write_rows(spill: Spill, found: list[_Part], to: Path, ordered: bool) -> Path:
    """The rows of what the agents kept, spilled task by task (``_first``: the task's first part), streamed to
    the Parquet file ``to`` in the in-memory order: the tasks in bucket order (``ordered``: as they came, the
    local engine's; else, Ray's, sorted), each compaction numbered by its row in the dataset's compactions
    table."""
    offsets = _offsets(found)
    rows = spill.scan("agent")
    if not ordered:
        rows = rows.sort("_first", maintain_order=True)
    offset = pl.col("_first").replace_strict(offsets, return_dtype=pl.UInt32)
    to.parent.mkdir(parents=True, exist_ok=True)
    rows.with_columns(pl.col("cut") + offset).drop("_first").sink_parquet(to)
    return to


def _offsets(found: list[_Part]) -> dict[str, int]:
    """Per task (by its first part), the recorded compactions of the tasks before it in bucket order: what its
    own compactions' numbers start from in the whole dataset's compactions table.

    >>> _offsets([_Part("b", compactions=3), _Part("a", compactions=2)])
    {'a': 0, 'b': 2}
    """
    found = sorted(found, key=lambda f: f.first)
    return dict(zip([f.first for f in found], itertools.accumulate((f.compactions for f in found), initial=0)))


def _sizes(cuts: pl.DataFrame) -> pl.DataFrame:
    """The distinct context sizes (``source_format``, ``context``) of recorded ``cuts``, sorted: where the
    pseudo-cuts go."""
    return (cuts.select(pl.col("source_format").cast(pl.String), pl.col("context").cast(pl.Int64))
            .drop_nulls().unique().sort("source_format", "context"))


def _baseline_task(root: str, parts: list[str], *, sizes: pl.DataFrame, horizon: int) -> _Part:
    """Pass 2 of one group of buckets: the pseudo-cuts of its quiet sessions at ``sizes`` (``source_format``,
    ``context``: the recorded cuts' over the whole dataset), measured, with their curve."""
    every = collect(scan_parts(root, "sessions", parts).select(SESSION, "source_format", "compactions"), root)
    quiet = every.filter((pl.col("compactions") == 0)
                         & pl.col("source_format").cast(pl.String).is_in(sizes["source_format"].implode()))
    messages, sessions = _of(root, parts, quiet[SESSION])
    cuts, curve, loss = _measured(messages, cut_rows(pseudo_cuts(messages, sizes, sessions), "baseline").collect(),
                                  horizon)
    return _Part(parts[0] if parts else "", cuts=cuts, curve=curve, loss=loss)


@dataclass
class _Cuts:
    """The command's fold of the tasks' cuts: ``total`` so far, their merged ``summary``, and whether their rows
    are still kept (``rows``: at most :data:`~panto_analytics.analysis.report.model.RECORDED_ROWS` cuts so far)."""

    total: int = 0
    summary: CalibrationSummary | None = None
    rows: bool = True
    #: The parts taken so far by :meth:`take`.
    kept: list[_Part] = dataclasses.field(default_factory=list)

    def take(self, found: Iterable[_Part]) -> list[_Part]:
        """The parts ``found`` in bucket order, each task's summary merged into :attr:`summary` and dropped from
        its part; once the cuts pass the threshold, every part's rows of cuts dropped too (and those kept so
        far): what the command holds of them then does not grow with the cuts."""
        self.kept = []
        for part in found:
            self.total += part.cuts.height if part.cuts is not None else 0
            if part.loss is not None:
                self.summary = merge_calibration([self.summary, part.loss])
            if self.rows and self.total > model.RECORDED_ROWS:
                self.rows = False
                self.kept = [_without_cuts(k) for k in self.kept]
            self.kept.append(dataclasses.replace(part, loss=None) if self.rows else _without_cuts(part))
        return sorted(self.kept, key=lambda f: f.first)


def _without_cuts(part: _Part) -> _Part:
    """``part`` without its rows of cuts, their curve and their summary."""
    return dataclasses.replace(part, cuts=None, curve=None, loss=None)


def _in_order(found: list[_Part], offset: int) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """The tasks' cuts, sorted as the whole corpus's (by session, position and size), and their curves with
    ``_cut`` renumbered to match, from ``offset``."""
    cuts = [(i, f.cuts, f.curve) for i, f in enumerate(found) if f.cuts is not None and f.curve is not None]
    if not cuts:
        return None, None
    rows = pl.concat([c.with_columns(_task=pl.lit(i, pl.UInt32)).with_row_index("_local") for i, c, _ in cuts],
                     how="vertical_relaxed")
    rows = rows.sort(pl.col(SESSION).cast(pl.String), "after_seq", "context", maintain_order=True)
    rows = rows.with_row_index("_cut", offset=offset)
    number = rows.select("_task", "_local", "_cut")
    curves = pl.concat([c.with_columns(_task=pl.lit(i, pl.UInt32)).rename({"_cut": "_local"}) for i, _, c in cuts],
                       how="vertical_relaxed")
    curve = (curves.join(number, on=["_task", "_local"], how="left")
             .sort("_cut", "calls", maintain_order=True)
             .select("_cut", *(c for c in curves.columns if c not in ("_task", "_local"))))
    return rows.drop("_task", "_local", "_cut"), curve


def recorded_dataset(root: str | Path, budgets: list[int], *, horizon: int, policies: Sequence[str] = (),
                     engine: str = "local", address: str | None = None, task_rows: int = TASK_ROWS,
                     rows_to: Path | None = None) -> Recorded:
    """What the report's sections on recorded compactions read (:class:`Recorded`), of the dataset at ``root``,
    task by task, here or on Ray, in the order the in-memory report has them (see the module docstring);
    ``rows_to``: a Parquet file to write every row of what the agents kept to (the report's
    ``recorded_compactions.parquet``), streamed from the tasks' rows spilled as they came.

    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> got = recorded_dataset(root, [0, 20_000], horizon=10)
    >>> got.agent_rows["cut"].n_unique(), sorted(set(got.cuts["cut"]))
    (7, ['baseline', 'compaction'])
    """
    run = functools.partial(map_buckets, root, engine=engine, address=address, rows=task_rows)
    fold = _Cuts()
    kept, cut = _Kept(model.RECORDED_ROWS), _Kept(model.RECORDED_ROWS)
    with Spill() as spill:
        came: list[str] = []
        tasks = run(functools.partial(_recorded_task, budgets=list(budgets), horizon=horizon, policies=list(policies),
                                      keep_rows=model.RECORDED_ROWS))
        first = fold.take(_folded(tasks, kept, cut, spill if rows_to is not None else None, came))
        if kept.counts is None:
            return Recorded(None, None, None, None)
        written = _write_rows(spill, first, rows_to, came == sorted(came)) if rows_to is not None else None
    agent_rows = None
    if (agent_in := kept.in_order()) is not None:  # each compaction numbered by its row in the dataset's table
        before = _offsets(first)
        agent_rows = pl.concat([rows.with_columns(pl.col("cut") + pl.lit(before[at], pl.UInt32)) for at, rows in agent_in],
                               how="vertical_relaxed")
    cuts, curve = _in_order(first, 0)
    found = [f.sizes for f in first if f.sizes is not None]
    if fold.total:
        sizes = pl.concat(found).unique().sort("source_format", "context")
        second = fold.take(run(functools.partial(_baseline_task, sizes=sizes, horizon=horizon)))
        more, more_curve = _in_order(second, cuts.height if cuts is not None else 0)
        if more is not None and more_curve is not None and cuts is not None and curve is not None:
            cuts = pl.concat([cuts, more], how="vertical_relaxed")
            curve = pl.concat([curve, more_curve], how="vertical_relaxed")
    if not fold.rows:
        cuts = curve = None
    policy_rows = None
    if (in_policy := cut.in_order()):  # policy after policy, as policy_cuts_at gives them; each in bucket order
        rows = pl.concat([r for _, r in in_policy], how="vertical_relaxed")
        order = {p: i for i, p in enumerate(policies)}
        policy_rows = rows.sort(pl.col("policy").replace_strict(order, default=len(order), return_dtype=pl.UInt32),
                                maintain_order=True)
    return Recorded(agent_rows, cuts, curve, policy_rows, fold.summary, agent_counts=kept.counts,
                    policy_counts=cut.counts, agent_file=written)

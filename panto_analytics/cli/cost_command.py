"""``cost``: what the recorded sessions cost, per group, with the price source."""
from __future__ import annotations

from pathlib import Path

import click

from ..defaults import COST_GROUPINGS
from ._notes import command, unpriced_notes
from ._options import engine_options, input_options
from ._output import output_option, write_frame
from ._reading import open_source

__all__ = ["cost_cmd"]


def _check_timezone(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(f"{value!r} is not an IANA time zone (e.g. UTC, Europe/Paris)") from None
    return value


@command("cost")
@input_options
@click.option("--by", "by", multiple=True, type=click.Choice(COST_GROUPINGS),
              help="Group the bill by this (repeatable, in order): session, day, week (from Monday), month, "
                   "model, project, format. None: one row for everything.")
@click.option("--prices", "prices_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE",
              help="A LiteLLM price file (model_prices_and_context_window.json, as ccusage uses) instead of the "
                   "genai-prices tables this version ships.")
@click.option("--provider", default=None, metavar="NAME",
              help="Where several providers price a model id, take this one's price (a genai-prices provider id, "
                   "e.g. zai or zhipuai for GLM models, whose lists differ; with --prices, the key prefix NAME/). "
                   "Each row's price_source names the providers whose prices it took.")
@click.option("--timezone", default="UTC", show_default=True, callback=_check_timezone, metavar="TZ",
              help="The time zone of --by day, week and month (an IANA name).")
@engine_options
@output_option
def cost_cmd(paths, format_, skip_invalid, by, prices_file, provider, timezone, engine, ray_address, output):
    """What the API calls recorded in PATHS cost, in US dollars, one row per group.

    Each row: the group, api_calls, the token counts (input, output,
    cache_read, cache_write_5m, cache_write_1h), input_usd, output_usd,
    cache_read_usd, cache_write_usd and cost_usd, priced_cost_usd (the
    part with a price), unpriced_calls, no_usage_calls and the price source
    (with the providers whose prices it took). A model without a price, or
    a call that recorded no usage, costs null, never 0: a note on stderr
    says how many calls went unpriced. A model id ending in :free costs 0.
    Prices come from the genai-prices
    tables shipped with this version (offline), or from --prices FILE; above
    200k prompt tokens each source's own rule applies (docs/cost.md).
    Over a dataset folder (ingest --dataset) the bill is summed bucket by
    bucket, here or with --engine ray, to the same figures.

    \b
    Examples:
      panto-analytics cost ~/.claude/projects --by day
      panto-analytics cost data/ --by model --by month -o costs.csv
      panto-analytics cost ~/.pi/agent/sessions --by session --timezone Europe/Paris -o - --output-format json
      panto-analytics cost ~/.claude/projects --by model --provider zai
      panto-analytics cost corpus.ds/ --by model --engine ray
    """
    from ..errors import InputError
    from ..outcomes import load_prices

    source = open_source(paths, format_, skip_invalid, engine, ray_address)
    try:
        prices = load_prices(prices_file, provider=provider)   # a bad price file is an error before any reading
    except InputError:
        raise
    except ValueError as e:   # an unknown provider
        raise click.BadParameter(str(e), param_hint="--provider") from None
    with unpriced_notes():
        table = source.cost(by=list(by), prices=prices, timezone=timezone)
    click.echo(f"note: prices from {prices.source}", err=True)
    write_frame(table, output)

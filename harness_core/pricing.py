"""Cost from tokens, where a harness reports tokens but no cost (Codex, ACP agents).

The price table is ``genai-prices`` (maintained by Pydantic, the same data as its JavaScript
package; it ships a snapshot, so nothing is fetched at run time). The estimate is recorded on
the usage event as ``cost_usd`` with ``cost_estimated=True`` and a cost budget binds on it.
A model the table does not know leaves the cost unknown, as before.
"""

from __future__ import annotations

import attrs
from harness_hookspecs import Usage, UsageReported


def priced(report: UsageReported, model: str | None, vendor: str | None) -> UsageReported:
    """``report`` with an estimated cost, when it has tokens, no cost, and a priced model."""
    usage = report.usage
    if usage.cost_usd is not None or model is None:
        return report
    cost = estimate_cost(usage, model, vendor)
    if cost is None:
        return report
    return UsageReported(usage=attrs.evolve(usage, cost_usd=cost, cost_estimated=True))


def estimate_cost(usage: Usage, model: str, vendor: str | None = None) -> float | None:
    """The USD cost of ``usage`` on ``model`` (``vendor``: the price table's provider id, a
    hint), or ``None`` when there are no tokens or the table does not know the model."""
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    from genai_prices import Usage as TokenUsage
    from genai_prices import calc_price

    tokens = TokenUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    for provider_id in (vendor, None) if vendor else (None,):
        try:
            return float(calc_price(tokens, model, provider_id=provider_id).total_price)
        except LookupError:
            continue
        except (ValueError, TypeError, ArithmeticError):
            return None
    return None

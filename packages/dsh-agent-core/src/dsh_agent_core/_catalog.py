"""The model catalog of the built-in providers: each model's context window, output limit and
list prices, as their public documentation gave them on the day named beside each table.

The catalog belongs to a provider's *base URL*, not to its name: a provider that points
``[providers.deepseek] base_url`` at a proxy or a gateway is not assumed to serve DeepSeek's
windows (its own server is asked instead), and a provider of any name whose ``base_url`` is
DeepSeek's or OpenAI's gets their catalog. What the configuration says wins over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BUILTIN_CATALOGS",
    "CatalogModel",
    "ModelPrices",
    "ProviderCatalog",
    "catalog_for",
    "catalog_model",
]


class ModelPrices(BaseModel):
    """List prices in USD per million tokens: ``input`` (not cached), ``cached_input`` (a
    cache hit; ``None``: not published), ``output``. The ``prices`` of a
    ``[models."provider:model"]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    output: float = Field(ge=0)


@dataclass(frozen=True)
class CatalogModel:
    """What a provider publishes about one model: its context window and output limit in
    tokens, its list prices (``None``: not confirmed on the day checked), and a note (an alias,
    a retirement)."""

    context_window: int
    max_output: int
    prices: ModelPrices | None = None
    note: str | None = None


@dataclass(frozen=True)
class ProviderCatalog:
    """The catalog of the provider at ``base_url``: its ``models``, checked on ``checked``
    (ISO date) in ``source``."""

    base_url: str
    checked: str
    source: str
    models: Mapping[str, CatalogModel] = field(default_factory=dict)


def _prices(input: float, cached_input: float | None, output: float) -> ModelPrices:
    return ModelPrices(input=input, cached_input=cached_input, output=output)


# DeepSeek, checked 2026-12-04 at https://api-docs.deepseek.com/quick_start/pricing (the
# model table: "CONTEXT LENGTH 1M", "MAX OUTPUT MAXIMUM: 384K"; read as the smaller, decimal
# 1,000,000 and 384,000, so compaction never waits past the real limit). Prices are the PEAK
# rates (01:00-04:00 and 06:00-10:00 UTC on weekdays); off-peak is exactly half, so a cost from
# these is an upper bound. deepseek-flash is DeepSeek-V4.1-Flash; the legacy names
# deepseek-v4-flash and deepseek-v4-flash-vision-exp are still accepted and served and billed as
# deepseek-flash. deepseek-chat and deepseek-reasoner were retired on 2026-07-24 15:59 UTC (the
# V4 release note, api-docs.deepseek.com/news/news260424): they keep the facts of the model
# they were aliases of (V4 Flash) so an old configuration still compacts, but the API refuses
# them.
_DEEPSEEK_FLASH = _prices(0.30, 0.006, 1.20)
_DEEPSEEK = ProviderCatalog(
    base_url="https://api.deepseek.com",
    checked="2026-12-04",
    source="https://api-docs.deepseek.com/quick_start/pricing",
    models={
        "deepseek-flash": CatalogModel(1_000_000, 384_000, _DEEPSEEK_FLASH),
        "deepseek-v4-pro": CatalogModel(1_000_000, 384_000, _prices(1.32, 0.044, 3.96)),
        "deepseek-v4-flash": CatalogModel(
            1_000_000, 384_000, _DEEPSEEK_FLASH, note="legacy name, served as deepseek-flash"
        ),
        "deepseek-v4-flash-vision-exp": CatalogModel(
            1_000_000, 384_000, _DEEPSEEK_FLASH, note="legacy name, served as deepseek-flash"
        ),
        "deepseek-chat": CatalogModel(
            1_000_000, 384_000, note="retired 2026-07-24 (was V4 Flash, non-thinking)"
        ),
        "deepseek-reasoner": CatalogModel(
            1_000_000, 384_000, note="retired 2026-07-24 (was V4 Flash, thinking)"
        ),
    },
)

# OpenAI, checked 2026-12-04 at https://developers.openai.com/api/docs/models (the flagship
# table: window, output limit, input and output price) and each model's own page
# (developers.openai.com/api/docs/models/<id>) where it gave the cached-input price. Standard
# tier, requests of at most 272K input tokens (above that OpenAI doubles input and bills output
# at 1.5x for the whole request). The GPT-6 models accept at most 922,000 input tokens of their
# 1,050,000-token window; compaction's threshold (80% by default) stays below that. A cached
# price the model pages did not show is left out (None), never guessed. The older models keep
# their documented windows and no prices (not confirmed for today).
_OPENAI = ProviderCatalog(
    base_url="https://api.openai.com/v1",
    checked="2026-12-04",
    source="https://developers.openai.com/api/docs/models",
    models={
        "gpt-6.2-astra": CatalogModel(1_050_000, 128_000, _prices(8.00, None, 40.00)),
        "gpt-6.2-sol": CatalogModel(1_050_000, 128_000, _prices(2.00, 0.10, 10.00)),
        "gpt-6.1-sol": CatalogModel(1_050_000, 128_000, _prices(2.00, None, 10.00)),
        "gpt-6.1-terra": CatalogModel(1_050_000, 128_000, _prices(1.00, None, 5.00)),
        "gpt-6-astra": CatalogModel(1_050_000, 128_000, _prices(10.00, 1.00, 50.00)),
        "gpt-6-sol": CatalogModel(1_050_000, 128_000, _prices(2.00, 0.20, 10.00)),
        "gpt-6-luna": CatalogModel(1_050_000, 128_000, _prices(0.10, None, 0.50)),
        "gpt-5.6-sol": CatalogModel(1_050_000, 128_000, _prices(4.00, None, 20.00)),
        "gpt-5.6": CatalogModel(
            1_050_000, 128_000, _prices(4.00, None, 20.00), note="alias of gpt-5.6-sol"
        ),
        "gpt-5.6-terra": CatalogModel(1_050_000, 128_000, _prices(2.00, 0.20, 12.00)),
        "gpt-5.6-luna": CatalogModel(1_050_000, 128_000, _prices(0.20, 0.02, 1.20)),
        "gpt-5.5": CatalogModel(1_050_000, 128_000),
        "gpt-5.1": CatalogModel(400_000, 128_000),
        "gpt-5": CatalogModel(400_000, 128_000),
        "gpt-4o": CatalogModel(128_000, 16_384),
        "gpt-4o-mini": CatalogModel(128_000, 16_384),
        "o3": CatalogModel(200_000, 100_000),
    },
)

BUILTIN_CATALOGS: tuple[ProviderCatalog, ...] = (_DEEPSEEK, _OPENAI)
"""The catalogs dsh carries: DeepSeek's and OpenAI's."""


def _normalized(base_url: str) -> str:
    return base_url.strip().rstrip("/").lower()


def catalog_for(base_url: str | None) -> ProviderCatalog | None:
    """The catalog of the provider served at ``base_url`` (a trailing slash and case aside),
    or ``None`` for any other server."""
    if not base_url:
        return None
    wanted = _normalized(base_url)
    for catalog in BUILTIN_CATALOGS:
        if _normalized(catalog.base_url) == wanted:
            return catalog
    return None


def catalog_model(base_url: str | None, model: str) -> CatalogModel | None:
    """What the catalog of the provider at ``base_url`` says of ``model`` (``None``: no
    catalog for that server, or not a model of it)."""
    catalog = catalog_for(base_url)
    return None if catalog is None else catalog.models.get(model)

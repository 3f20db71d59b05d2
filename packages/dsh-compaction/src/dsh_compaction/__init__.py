"""Context compaction for DSH agents: the token meter, compaction into a logged checkpoint
(pressure, overflow, manual), and tool-result pruning, on the loop's extension points.

Mount it with ``Compactor(models, CompactionConfig()).install(extensions)``; everything it does is
logged as format v0 writes it (``compaction/start|summary|end``, a checkpoint ``user/message``
replacing the range on the surface, ``compaction/prune`` + a replacing ``tool/result``), so a
session's requests still rebuild from its log alone.
"""

from dsh_compaction._brackets import BracketState, OpenBracket
from dsh_compaction._compactor import OVERFLOW_CODE, Compactor
from dsh_compaction._config import (
    PRUNE_MARKER,
    CompactionConfig,
    CompactionPolicy,
    ModelPolicy,
    PruneConfig,
)
from dsh_compaction._errors import (
    COMPACTION_ERROR_CODES,
    CompactionError,
    CompactionErrorCode,
    MeterError,
)
from dsh_compaction._estimate import (
    estimate_content,
    estimate_envelope,
    estimate_message,
    utf16_length,
)
from dsh_compaction._invariant import CompactionInvariantError, check_compaction_log
from dsh_compaction._meter import (
    Baseline,
    BaselineKind,
    PricedNode,
    PricedNodes,
    TokenMeasurement,
    TokenMeter,
)
from dsh_compaction._prune import PrunedResult, PruneReport, prune_content, prune_session
from dsh_compaction._retention import CompactionRange, balanced_cuts, select_compactable_range
from dsh_compaction._slicing import (
    MIN_SUMMARY_TOKENS,
    SUMMARY_MARGIN_RATIO,
    SummaryBudget,
    SummarySlice,
)
from dsh_compaction._summary import (
    CHECKPOINT_CLOSE,
    CHECKPOINT_OPEN,
    CHECKPOINT_PLUGIN,
    INSTRUCTION_PLUGIN,
    SUMMARY_INSTRUCTION,
    Summarizer,
    Summary,
    SummaryFailure,
    SummaryRequest,
    checkpoint_content,
    model_summarizer,
)
from dsh_compaction._transaction import CompactionResult, run_compaction

__all__ = [
    "CHECKPOINT_CLOSE",
    "CHECKPOINT_OPEN",
    "CHECKPOINT_PLUGIN",
    "COMPACTION_ERROR_CODES",
    "INSTRUCTION_PLUGIN",
    "MIN_SUMMARY_TOKENS",
    "OVERFLOW_CODE",
    "PRUNE_MARKER",
    "SUMMARY_INSTRUCTION",
    "SUMMARY_MARGIN_RATIO",
    "Baseline",
    "BaselineKind",
    "BracketState",
    "CompactionConfig",
    "CompactionError",
    "CompactionErrorCode",
    "CompactionInvariantError",
    "CompactionPolicy",
    "CompactionRange",
    "CompactionResult",
    "Compactor",
    "MeterError",
    "ModelPolicy",
    "OpenBracket",
    "PricedNode",
    "PricedNodes",
    "PruneConfig",
    "PruneReport",
    "PrunedResult",
    "Summarizer",
    "Summary",
    "SummaryBudget",
    "SummaryFailure",
    "SummaryRequest",
    "SummarySlice",
    "TokenMeasurement",
    "TokenMeter",
    "balanced_cuts",
    "check_compaction_log",
    "checkpoint_content",
    "estimate_content",
    "estimate_envelope",
    "estimate_message",
    "model_summarizer",
    "prune_content",
    "prune_session",
    "run_compaction",
    "select_compactable_range",
    "utf16_length",
]

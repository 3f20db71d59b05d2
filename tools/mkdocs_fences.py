"""A mkdocs hook: opening code fences keep only their language for the site.

The documentation's fences carry options for ``tools/run_doc_examples.py`` after the language
(``python no-run reason="..."``, ``toml dsh-config``, ``console exit=1``).
Markdown's fenced-code extension accepts a bare language only and would render such a block as
a paragraph, so the options are cut before the page is rendered (the source keeps them).
"""

from __future__ import annotations

import re
from typing import Any

_OPENING = re.compile(r"^(?P<fence> {0,3}```[A-Za-z0-9_+-]+)[ \t]+[^`\n]*$", re.MULTILINE)


def strip_fence_options(markdown: str) -> str:
    """``markdown`` with every opening fence reduced to its language."""
    return _OPENING.sub(lambda match: match.group("fence"), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' page-markdown event."""
    return strip_fence_options(markdown)

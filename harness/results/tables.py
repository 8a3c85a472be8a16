"""Tables as people read them: aligned plain text for the terminal, Markdown for report.md and the README."""
from __future__ import annotations

import re


def aligned(header: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """A plain-text table: the `left` columns (names, words) left-aligned, the figures right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return "\n".join("  ".join(cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
                     .rstrip() for line in [header, *rows])


def markdown(header: list[str], rows: list[list[str]], names: int = 2) -> str:
    """A Markdown table; the first `names` columns left-aligned, the rest (figures) right-aligned."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < names else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def code_span(text: str) -> str:
    """`text` as a Markdown code span fit for a table cell, shown as written (no emphasis; `<redacted>` kept):
    delimited by one backtick more than its longest run of them, padded with a space where it starts or ends with
    one (CommonMark 0.31.2, 6.1 Code spans), its pipes escaped, which GFM tables split on even inside a code span
    (GFM 0.29, 4.10 Tables, example 200)."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"

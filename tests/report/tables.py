"""Reading a report page's tables back as text, for the tests that check what a table shows."""

from __future__ import annotations

import html
import re


def table_rows(page: str, table_id: str) -> list[list[str]]:
    """The cells of a table's body rows, as text."""
    seg = page[page.index(f'id="{table_id}"'):]
    seg = seg[:seg.index("</table>")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S) for r in re.findall(r"<tr>(.*?)</tr>", seg, flags=re.S)]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in r] for r in rows if r]

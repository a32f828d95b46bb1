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


def standings_of(cells, kinds: dict[str, str], folds: int = 3, n_valid: float = 1000.0):
    """The ``standings`` view's rows over hand-made cells, computed by the view's own SQL (pipeline/data/views.py)
    on an in-memory database holding them as ``expected_cells``: a statistic's test feeds it what a results file
    would. ``cells``: dataset, sample_size, n_train, model, fold, score (and optionally split_key, repeat, seed,
    status, val_score, epochs_bound, n_valid, score_name); ``kinds``: model → its stored kind."""
    import duckdb
    import pandas as pd

    from pipeline.data.views import VIEWS

    c = pd.DataFrame(cells).copy()
    defaults = {"split_key": "k", "repeat": 0, "seed": 0, "status": "ok", "epochs_bound": False, "n_valid": n_valid,
                "score_name": "accuracy"}
    for col, value in defaults.items():
        if col not in c:
            c[col] = value
    if "val_score" not in c:
        c["val_score"] = c.score
    c["model_kind"] = c.model.map(kinds)
    c["cell_id"] = [f"c{i}" for i in range(len(c))]
    con = duckdb.connect()
    con.register("given", c)
    con.execute("CREATE TABLE expected_cells AS SELECT * FROM given")
    con.execute("CREATE TABLE current_results AS SELECT cell_id, n_valid FROM given")
    con.execute(f"CREATE TABLE designs AS SELECT DISTINCT dataset, split_key, {int(folds)} AS folds FROM given")
    return con.execute(f"SELECT * FROM ({VIEWS['standings']}) ORDER BY dataset, split_key, n_train, model, versus").df()

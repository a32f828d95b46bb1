"""The attention page: each attention model's mean feature-to-feature attention map per dataset."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from pipeline.report import figures as figs
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import Page, note
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg

# the maps read every current result, not the compared cells: no shared-splits note
SPEC = PageSpec("attention.html", "Attention maps", "Mean feature-to-feature attention maps per dataset and model.",
                lambda s: page_attention(s.data), compares=False)


MAX_ATTENTION_FEATURES = 60  # wider maps show the features that receive the most attention
MeanMap = tuple[str, str, str, str, list[str], np.ndarray, int]


def mean_maps(att: pd.DataFrame) -> list[MeanMap]:
    """(dataset, split_key, model, size, features, mean map, n cells) at each pair's largest size."""
    out: list[MeanMap] = []
    if att.empty:
        return out
    for (dataset, split_key, model), g in att.groupby(["dataset", "split_key", "model"], sort=True):
        size = agg.size_order(g.sample_size)[-1]
        g = g[g.sample_size == size]
        feats = json.loads(g["features"].iloc[0])
        mats = [np.asarray(json.loads(x), dtype=float) for x in g["map"]]
        mats = [x for x in mats if x.shape == (len(feats), len(feats))]
        if mats:
            out.append((dataset, split_key, model, size, feats, np.nanmean(np.stack(mats), axis=0), len(mats)))
    return out


def page_attention(data: ReportData) -> Page:
    p = SPEC.page()
    p.card("Mean feature-to-feature attention of each attention model, averaged over heads, layers and test rows "
           "by the model, and here over folds and seeds at the largest training size run. Row = the attending "
           "(query) feature, column = the attended (key) feature. Colour shows each weight as a multiple of "
           "uniform attention (1/number of features): white is uniform, red more, blue less, on a fixed scale, "
           "so a map within a few percent of uniform looks uniform. Under each map: its range of weights and "
           "its mean distance from uniform (total variation, 0 = uniform, 1 = all attention on one feature).")
    maps = mean_maps(data.attention)
    if not maps:
        p.add(note("No attention maps recorded (no attention model finished a cell)."))
        return p
    by_dataset: dict[tuple[str, str], list[MeanMap]] = {}
    for m in maps:
        by_dataset.setdefault((m[0], m[1]), []).append(m)
    for i, ((dataset, split_key), items) in enumerate(sorted(by_dataset.items())):
        p.h2(data.task_label(dataset, split_key), f"dataset-{i}")
        for j, (_, _, model, size, feats, mat, n) in enumerate(items):
            shown = np.arange(len(feats))
            if len(feats) > MAX_ATTENTION_FEATURES:
                shown = np.sort(np.argsort(-np.nansum(mat, axis=0))[:MAX_ATTENTION_FEATURES])
                p.add(note(f"{model}: {len(feats)} features; showing the {MAX_ATTENTION_FEATURES} that receive the "
                           "most attention."))
            u = agg.uniformity(mat)
            ratio = agg.uniform_ratio(mat)
            p.figure(figs.attention_heatmap(ratio[np.ix_(shown, shown)], [feats[k] for k in shown],
                                            f"{model} · {size_label(size)} · mean of {n} cells",
                                            weights=mat[np.ix_(shown, shown)]), f"fig-attention-{i}-{j}")
            verdict = (f"uniform to within {agg.UNIFORM_TV:.0%}: the model attends to every feature alike, and "
                       "the pattern carries no information" if u.uniform else "not uniform")
            cls = (f"; each row gives the {u.n_keys} features {u.row_sum:.3f} of its attention, the rest to "
                   "other tokens ([CLS])" if u.row_sum < 0.999 else "")
            p.add(note(f"{model}: weights {u.low:.4f}–{u.high:.4f} (uniform {u.uniform_weight:.4f}{cls}), "
                       f"{u.ratio_low:.2f}×–{u.ratio_high:.2f}× uniform; distance from uniform {u.tv:.3f}: {verdict}."))
    return p

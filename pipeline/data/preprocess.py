"""Preprocessing fit on the training rows only, and the arrays that reach the trials.

- Numeric features: standardised (or quantile-transformed) with training statistics; missing values
  stay NaN here — boosting uses them natively, torch models see 0 (the training mean) — see
  :meth:`Part.x_num_filled`.
- Categorical features: integer codes by training frequency; code 0 is missing or unseen. Past
  ``max_categories`` levels, the rarer ones share one 'other' code, so an ID-like column cannot blow
  up an embedding table.
- Targets: class indices over the dataset's full, sorted class list (every fold agrees on them), or
  floats; torch regression trains on a standardised target and predicts in original units.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd


@dataclass
class Part:
    """One part of a split (train, valid or test), as arrays."""

    x_num: np.ndarray  # N × n_num float32, NaN = missing
    x_cat: np.ndarray  # N × n_cat int64, 0 = missing/unseen
    y: np.ndarray  # N int64 class index, or N float64

    def __len__(self) -> int:
        return len(self.y)

    def x_num_filled(self) -> np.ndarray:
        return np.nan_to_num(self.x_num, nan=0.0)

    def take(self, idx: np.ndarray) -> Part:
        return Part(self.x_num[idx], self.x_cat[idx], self.y[idx])


@dataclass
class FoldData:
    """Everything a trial needs: three parts plus what the models must know about the features."""

    task_type: str
    n_classes: int  # 0 for regression
    num_names: list[str]
    cat_names: list[str]
    cat_cardinalities: list[int]  # including code 0
    train: Part
    valid: Part
    test: Part
    y_mean: float = 0.0  # regression target statistics of the training part
    y_std: float = 1.0
    info: dict[str, object] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        return self.num_names + self.cat_names

    @property
    def d_out(self) -> int:
        return 1 if self.task_type == "regression" else self.n_classes

    def without_parts(self) -> FoldData:
        """What prediction needs (task, classes, features, target scale) with empty parts: a fitted
        learner keeps this, not the training arrays."""
        def empty(p: Part) -> Part:
            return Part(p.x_num[:0], p.x_cat[:0], p.y[:0])

        return replace(self, train=empty(self.train), valid=empty(self.valid), test=empty(self.test))


@dataclass
class Preprocessor:
    numeric: str = "standard"
    max_categories: int = 256
    num_names: list[str] = field(default_factory=list)
    cat_names: list[str] = field(default_factory=list)
    levels_: dict[str, dict[str, int]] = field(default_factory=dict)
    capped_: dict[str, bool] = field(default_factory=dict)
    mean_: np.ndarray | None = None
    std_: np.ndarray | None = None
    quantile_: object | None = None

    def fit(self, x: pd.DataFrame) -> Preprocessor:
        self.cat_names = [c for c in x.columns if isinstance(x[c].dtype, pd.CategoricalDtype)]
        self.num_names = [c for c in x.columns if c not in self.cat_names]
        for c in self.cat_names:
            counts = x[c].astype(str).where(x[c].notna()).value_counts()
            self.capped_[c] = len(counts) >= self.max_categories
            keep = counts.index[: self.max_categories - 1] if self.capped_[c] else counts.index
            self.levels_[c] = {v: i + 1 for i, v in enumerate(sorted(keep))}
        num = x[self.num_names].to_numpy(dtype=np.float64)
        if self.numeric == "quantile" and len(num):
            from sklearn.preprocessing import QuantileTransformer

            qt = QuantileTransformer(output_distribution="normal", n_quantiles=max(min(len(num) // 30, 1000), 10),
                                     subsample=10**9, random_state=0)
            self.quantile_ = qt.fit(num)
        else:
            with np.errstate(invalid="ignore"):
                self.mean_ = np.nan_to_num(np.nanmean(num, axis=0)) if len(num) else np.zeros(num.shape[1])
                std = np.nanstd(num, axis=0) if len(num) else np.ones(num.shape[1])
            self.std_ = np.where(np.isfinite(std) & (std > 1e-12), std, 1.0)
        return self

    @property
    def cardinalities(self) -> list[int]:
        # +1 for code 0 (missing/unseen), +1 for the shared 'other' code of capped columns.
        return [len(self.levels_[c]) + 1 + int(self.capped_[c]) for c in self.cat_names]

    def transform(self, x: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        num = x[self.num_names].to_numpy(dtype=np.float64)
        if self.quantile_ is not None:
            nan = np.isnan(num)
            num = self.quantile_.transform(np.where(nan, np.nanmedian(num, axis=0), num))  # type: ignore[attr-defined]
            num[nan] = np.nan
        elif len(self.num_names):
            num = (num - self.mean_) / self.std_
        cat = np.zeros((len(x), len(self.cat_names)), dtype=np.int64)
        for j, c in enumerate(self.cat_names):
            levels = self.levels_[c]
            other = len(levels) + 1
            vals = x[c].astype(str).where(x[c].notna())
            codes = vals.map(levels)
            if self.capped_[c]:
                codes = codes.where(codes.notna() | vals.isna(), other)
            cat[:, j] = codes.fillna(0).to_numpy(dtype=np.int64)
        return num.astype(np.float32), cat


def encode_target(y: pd.Series, task_type: str, classes: list[str] | None) -> np.ndarray:
    if task_type == "regression":
        return y.to_numpy(dtype=np.float64)
    assert classes is not None
    index = {c: i for i, c in enumerate(classes)}
    return y.astype(str).map(index).to_numpy(dtype=np.int64)


def build_fold(
    features: pd.DataFrame, y: pd.Series, task_type: str, classes: list[str] | None,
    train_ids: np.ndarray, valid_ids: np.ndarray, test_ids: np.ndarray,
    numeric: str = "standard", max_categories: int = 256,
) -> FoldData:
    """Fit preprocessing on ``train_ids`` alone and encode all three parts."""
    pre = Preprocessor(numeric=numeric, max_categories=max_categories).fit(features.iloc[train_ids])
    target = encode_target(y, task_type, classes)
    parts = {}
    for name, ids in (("train", train_ids), ("valid", valid_ids), ("test", test_ids)):
        xn, xc = pre.transform(features.iloc[ids])
        parts[name] = Part(xn, xc, target[ids])
    y_train = parts["train"].y
    return FoldData(
        task_type=task_type,
        n_classes=len(classes) if classes else 0,
        num_names=pre.num_names,
        cat_names=pre.cat_names,
        cat_cardinalities=pre.cardinalities,
        y_mean=float(y_train.mean()) if task_type == "regression" else 0.0,
        y_std=float(y_train.std() or 1.0) if task_type == "regression" else 1.0,
        train=parts["train"], valid=parts["valid"], test=parts["test"],
    )

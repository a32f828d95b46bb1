"""scikit-learn estimators around every model of the registry (torch networks and boosting alike).

>>> clf = TabularClassifier("ft_transformer", random_state=0, d_token=32, max_epochs=5)  # doctest: +SKIP
>>> clf.fit(X_train, y_train).predict_proba(X_test)  # doctest: +SKIP

``model`` is a registered model's name, or an import path (``package.module:Class``) to a torch
``nn.Module`` or a Learner subclass, resolved as a suite's ``builder:`` or ``learner:`` is.

``__init__`` only stores parameters: the estimator's own (``model``, ``random_state``,
``validation_fraction``, ``device``, ``max_seconds``) and any number of the model's hyperparameters
(architecture and training recipe, e.g. ``d_token=64, lr=3e-4, max_epochs=50``), which
``get_params`` / ``set_params`` / ``clone`` see like any other. Unknown hyperparameters are an error
at ``fit`` that names the key and the allowed ones.

``fit`` carves a seeded, stratified validation part from the training rows unless ``X_valid`` and
``y_valid`` are given, fits the :class:`~pipeline.data.preprocess.Preprocessor` on the training part
only, and trains through the model's own Learner, as a trial does (a torch model: the shared recipe
of :mod:`pipeline.train.loop`; early stopping on the validation part, best iteration kept). Pandas 'category', object, string and boolean columns are
categorical; everything else is numeric. NumPy arrays are numeric unless they hold objects.
``n_jobs`` is torch's thread count during fit and predict: None (the default) is one thread, as in
scikit-learn, -1 every core. A fit whose best epoch (or boosting round) was its last warns
(``ConvergenceWarning``), naming the key to raise: the model's own budget (``max_epochs``,
``n_estimators``, ``iterations``: its Learner's ``capabilities.budget``), or ``max_seconds``. A
classifier refuses a continuous ``y``, and numeric labels that look like a regression target: more
than :data:`MANY_CLASSES` classes with fewer than :data:`ROWS_PER_CLASS` rows each on average (use
:class:`TabularRegressor`).
"""

from __future__ import annotations

import abc
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from pipeline.data.preprocess import FoldData, Part, Preprocessor
from pipeline.models.registry import ModelInfo, by_path, get
from pipeline.records import OUT_OF_BUDGET, StopReason

_OWN_PARAMS = ("model", "random_state", "validation_fraction", "device", "n_jobs", "max_seconds")
# Numeric class labels whose classes are all rare are a regression target given to a classifier: more
# than MANY_CLASSES classes with fewer than ROWS_PER_CLASS rows each on average (diabetes' integer
# target: 214 values in 442 rows) are refused.
MANY_CLASSES = 20
ROWS_PER_CLASS = 5


def _as_frame(X: Any) -> tuple[pd.DataFrame, bool]:
    """X as a DataFrame with string column names; True when X came with its own column names."""
    if isinstance(X, pd.DataFrame):
        named = all(isinstance(c, str) for c in X.columns)
        frame = X if named else X.set_axis([f"x{i}" for i in range(X.shape[1])], axis=1)
        return frame.reset_index(drop=True), named
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (rows × features), got shape {arr.shape}")
    frame = pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])
    return (frame.infer_objects() if arr.dtype == object else frame), False


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` for the block (unchanged when None), then restored."""
    import torch

    before = torch.get_num_threads()
    # scikit-learn's convention: None is one thread (torch's own default, every core, is several times
    # slower for models this small on a few cores), -1 every core.
    torch.set_num_threads(1 if n is None else (os.cpu_count() or 1) if n < 0 else max(1, n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _categorical_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns
            if isinstance(frame[c].dtype, pd.CategoricalDtype) or frame[c].dtype == object
            or pd.api.types.is_string_dtype(frame[c].dtype) or pd.api.types.is_bool_dtype(frame[c].dtype)]


class _TabularEstimator(BaseEstimator, abc.ABC):
    """What the classifier and the regressor share; see the module docstring."""

    _task: str  # "classification" | "regression"

    def __init__(self, model: str = "ft_transformer", *, random_state: int = 0,
                 validation_fraction: float = 0.2, device: str = "cpu", n_jobs: int | None = None,
                 max_seconds: float | None = None, **hyperparams: Any) -> None:
        self.model = model
        self.random_state = random_state
        self.validation_fraction = validation_fraction
        self.device = device
        self.n_jobs = n_jobs
        self.max_seconds = max_seconds
        for key, value in hyperparams.items():
            setattr(self, key, value)

    # ------------------------------------------------------------------------------------ params
    def _hyperparam_names(self) -> list[str]:
        return sorted(k for k in vars(self)
                      if k not in _OWN_PARAMS and not k.startswith("_") and not k.endswith("_"))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = super().get_params(deep=deep)
        params.update({k: getattr(self, k) for k in self._hyperparam_names()})
        return params

    def set_params(self, **params: Any) -> _TabularEstimator:
        own = {k: v for k, v in params.items() if k in _OWN_PARAMS}
        super().set_params(**own)
        for key, value in params.items():
            if key in own:
                continue
            if key.startswith("_") or key.endswith("_"):
                raise ValueError(f"invalid parameter {key!r}: names starting or ending in '_' are reserved")
            setattr(self, key, value)
        return self

    def _info(self) -> ModelInfo:
        """The model: a registered name, or an import path resolved as a suite's ``builder:`` or
        ``learner:`` is."""
        return by_path(self.model) if ":" in self.model else get(self.model)

    def _config(self) -> dict[str, Any]:
        info = self._info()
        hyper = {k: getattr(self, k) for k in self._hyperparam_names()}
        allowed = info.config_defaults()
        unknown = sorted(set(hyper) - set(allowed))
        if unknown:
            raise ValueError(f"model {self.model!r}: unknown hyperparameter(s) {unknown}; "
                             f"allowed: {', '.join(sorted(allowed))}")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(f"validation_fraction={self.validation_fraction} must be in (0, 1)")
        return {**allowed, **info.task_defaults(self._task), **hyper}  # regression | classification

    # ----------------------------------------------------------------------------------- fitting
    @abc.abstractmethod
    def _encode_y(self, y: Any, fitting: bool) -> np.ndarray:
        """Targets as class indices (classifier, which learns ``classes_``) or floats (regressor)."""

    def _frame(self, X: Any, fitting: bool) -> pd.DataFrame:
        frame, named = _as_frame(X)
        if fitting:
            self.n_features_in_ = frame.shape[1]
            if named:
                self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return frame
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {frame.shape[1]} features, but the estimator was fitted with "
                             f"{self.n_features_in_}")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and named:
            missing = sorted(set(names) - set(frame.columns))
            if missing:
                raise ValueError(f"X lacks the feature(s) seen in fit: {missing}")
            return frame[list(names)]
        if names is not None:
            return frame.set_axis(list(names), axis=1)
        return frame.set_axis([f"x{i}" for i in range(frame.shape[1])], axis=1)

    def _split(self, frame: pd.DataFrame, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids = np.arange(len(y))
        if self._task == "classification":
            strata = y
        else:
            strata = pd.qcut(pd.Series(y).rank(method="first"), q=min(10, len(y)), labels=False).to_numpy()
        n_valid = int(np.ceil(len(y) * self.validation_fraction))
        counts = np.bincount(strata)
        ok = counts[counts > 0].min() >= 2 and n_valid >= len(np.unique(strata))
        train_ids, valid_ids = train_test_split(ids, test_size=self.validation_fraction,
                                                random_state=self.random_state,
                                                stratify=strata if ok else None)
        return np.sort(train_ids), np.sort(valid_ids)

    def _meta(self) -> FoldData:
        """A FoldData carrying what prediction needs (task, classes, target scale), with empty parts."""
        pre = self.preprocessor_
        empty = Part(np.zeros((0, len(pre.num_names)), np.float32),
                     np.zeros((0, len(pre.cat_names)), np.int64), np.zeros(0))
        task_type = "regression" if self._task == "regression" else (
            "binary" if self.n_classes_ == 2 else "multiclass")
        return FoldData(task_type=task_type, n_classes=getattr(self, "n_classes_", 0),
                        num_names=pre.num_names, cat_names=pre.cat_names,
                        cat_cardinalities=pre.cardinalities, train=empty, valid=empty, test=empty,
                        y_mean=self.target_mean_, y_std=self.target_std_)

    def fit(self, X: Any, y: Any, X_valid: Any = None, y_valid: Any = None) -> _TabularEstimator:
        """Train on (X, y); early stopping on (X_valid, y_valid), or on a seeded stratified share of X."""
        import torch

        from pipeline.learners import make_learner

        config = self._config()
        if (X_valid is None) != (y_valid is None):
            raise ValueError("give both X_valid and y_valid, or neither")
        frame = self._frame(X, fitting=True)
        target = self._encode_y(y, fitting=True)
        if len(target) != len(frame):
            raise ValueError(f"X has {len(frame)} rows but y has {len(target)}")
        if X_valid is None:
            train_ids, valid_ids = self._split(frame, target)
            train_x, valid_x = frame.iloc[train_ids], frame.iloc[valid_ids]
            train_y, valid_y = target[train_ids], target[valid_ids]
        else:
            train_x, train_y = frame, target
            valid_x, valid_y = self._frame(X_valid, fitting=False), self._encode_y(y_valid, fitting=False)
        cats = _categorical_columns(frame)
        self.categorical_features_ = cats
        pre = Preprocessor().fit(self._typed(train_x))
        self.preprocessor_ = pre
        self.target_mean_ = float(train_y.mean()) if self._task == "regression" else 0.0
        self.target_std_ = float(train_y.std() or 1.0) if self._task == "regression" else 1.0
        data = self._meta()
        data.train = Part(*pre.transform(self._typed(train_x)), train_y)
        data.valid = Part(*pre.transform(self._typed(valid_x)), valid_y)
        max_seconds = float("inf") if self.max_seconds is None else self.max_seconds
        with _torch_threads(self.n_jobs):
            info = self._info()
            # device: any torch device for a torch model; 'auto' is a GPU where the model can use one and there is one
            device = {} if self.device == "auto" else {"device": self.device}
            gpu = self.device != "cpu" and info.capabilities.gpu and torch.cuda.is_available()
            learner = make_learner(info, config, threads=torch.get_num_threads(), use_gpu=gpu,
                                   seed=self.random_state, max_seconds=max_seconds, **device)
            report = learner.fit(data)
        self.learner_ = learner
        self.module_ = getattr(learner, "module", None)  # a torch model's trained nn.Module
        self.device_ = getattr(learner, "device", None) or ("cuda" if gpu else "cpu")
        self.n_epochs_, self.best_epoch_ = report.iterations, report.best_iteration
        self.curve_, self.stop_reason_ = report.curve, report.stop_reason
        self.precision_ = report.precision  # a torch model's: fp32, bf16 or fp16 (amp: auto picks it)
        if report.stop_reason in OUT_OF_BUDGET and report.best_iteration >= report.iterations:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(self._still_improving(info, config, report.stop_reason, report.iterations), ConvergenceWarning,
                          stacklevel=2)
        return self

    def _still_improving(self, info: ModelInfo, config: dict[str, Any], stop_reason: StopReason | str,
                         iterations: int) -> str:
        """The warning of a fit whose best iteration was its last, naming what ran out in the model's own
        words: its budget key (its Learner's ``capabilities.budget``) or ``max_seconds``."""
        caps = info.capabilities
        step = (caps.rungs or "iterations").removesuffix("s")  # epoch, boosting round
        if stop_reason == StopReason.TIME_LIMIT:
            key, value = "max_seconds", self.max_seconds
        else:
            key = caps.budget or f"the {step}s it may run"
            value = config.get(caps.budget) if caps.budget else iterations
        return (f"{self.model} was still improving when it stopped at {key}={value}: its best {step} was its last "
                f"({iterations}); raise {key}")

    def _typed(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The categorical columns found in fit as pandas categories, the rest as floats."""
        out = frame.copy()
        for c in out.columns:
            if c in self.categorical_features_:
                out[c] = out[c].astype("string").astype("category")
            else:
                out[c] = pd.to_numeric(out[c], errors="raise").astype(np.float64)
        return out

    def _part(self, X: Any) -> Part:
        frame = self._frame(X, fitting=False)
        xn, xc = self.preprocessor_.transform(self._typed(frame))
        return Part(xn, xc, np.zeros(len(frame)))

    def _raw_predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "learner_")
        with _torch_threads(self.n_jobs):
            return self.learner_.predict(self._part(X))

    # ------------------------------------------------------------------------------ inspection
    def _has_attention(self) -> bool:
        return self._info().attention

    @available_if(_has_attention)
    def feature_attention(self, X: Any) -> pd.DataFrame:
        """Mean feature-to-feature attention on the rows of X (F × F, rows attend to columns).

        Features are in the model's token order (numeric, then categorical), named as in ``X``.
        """
        check_is_fitted(self, "learner_")
        part = self._part(X)
        with _torch_threads(self.n_jobs):
            fa = self.learner_.feature_attention(part, rows=len(part))
        names = self.preprocessor_.num_names + self.preprocessor_.cat_names
        return pd.DataFrame(fa, index=names, columns=names)


class TabularClassifier(ClassifierMixin, _TabularEstimator):
    """A registered torch model as a scikit-learn classifier (see the module docstring).

    Fitted attributes: ``classes_``, ``n_classes_``, ``n_features_in_``, ``feature_names_in_`` (for
    DataFrames with string column names), ``module_`` (the trained ``nn.Module``), ``preprocessor_``,
    ``categorical_features_``, ``n_epochs_``, ``best_epoch_``, ``curve_``, ``stop_reason_``.
    """

    _task = "classification"

    def _encode_y(self, y: Any, fitting: bool) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1:
            y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
        if fitting:
            from sklearn.utils.multiclass import check_classification_targets

            check_classification_targets(y)  # a continuous y is a regression target: refused
            self.classes_ = np.unique(y)
            self.n_classes_ = len(self.classes_)
            if self.n_classes_ < 2:
                raise ValueError(f"y has {self.n_classes_} class; a classifier needs at least 2")
            numeric = np.issubdtype(y.dtype, np.number) and not np.issubdtype(y.dtype, np.bool_)
            if numeric and self.n_classes_ > MANY_CLASSES and len(y) < ROWS_PER_CLASS * self.n_classes_:
                raise ValueError(f"y has {self.n_classes_} distinct numbers in {len(y)} rows ({len(y) / self.n_classes_:.1f} "
                                 f"rows per class): a classifier would learn one class per value, each of them rare; "
                                 "for a numeric target use TabularRegressor")
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        unseen = self.classes_[idx] != y
        if unseen.any():
            raise ValueError(f"y has labels not seen in fit: {sorted(set(y[unseen].tolist()))[:5]}")
        return idx.astype(np.int64)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (N × n_classes), columns in the order of ``classes_``."""
        return self._raw_predict(X).astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "learner_")
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


class TabularRegressor(RegressorMixin, _TabularEstimator):
    """A registered torch model as a scikit-learn regressor (see the module docstring); trains on the
    standardised target and predicts in its original units."""

    _task = "regression"

    def _encode_y(self, y: Any, fitting: bool) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape(-1)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
        if not np.isfinite(y).all():
            raise ValueError("y has NaN or infinite values")
        return y

    def predict(self, X: Any) -> np.ndarray:
        return self._raw_predict(X).astype(np.float64)

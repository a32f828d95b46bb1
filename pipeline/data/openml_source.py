"""OpenML, through its own client: a task's rows, target and official folds, a suite's task ids, and every
call under a network timeout, with a failure said in one line (what the server answered, or that it is
unreachable and not in the local cache). Runs on the driver only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.raw import RawDataset, source_of, validate
from pipeline.errors import DataError
from pipeline.suite_datasets import OpenMLTask


def configure_openml(cache_dir: str | None = None, server: str | None = None) -> None:
    """Point the openml client at a cache folder or another server; with neither, nothing to do (and the client,
    about a second to import, is imported only by a run that reads OpenML)."""
    if not cache_dir and not server:
        return
    import openml

    if cache_dir:
        openml.config.set_root_cache_directory(str(Path(cache_dir).expanduser()))
    if server:
        openml.config.server = server


OPENML_TIMEOUT_S = float(os.environ.get("ATTNBENCH_NET_TIMEOUT_S", "30"))


@contextlib.contextmanager
def network_timeout(seconds: float | None = None) -> Iterator[None]:
    """A timeout on every connection attempt and read of the openml client, which passes none to
    ``requests`` (a server that accepts and then says nothing would hold it forever). For the length of
    the block, a ``requests`` call without a timeout of its own gets this one."""
    import requests

    limit = OPENML_TIMEOUT_S if seconds is None else seconds
    plain = requests.Session.request

    def request(self: requests.Session, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and kwargs.get("timeout") is None:  # openml passes keywords only
            kwargs["timeout"] = limit
        return plain(self, method, url, *args, **kwargs)

    requests.Session.request = request  # type: ignore[method-assign]
    try:
        yield
    finally:
        requests.Session.request = plain  # type: ignore[method-assign]


def openml_error(what: str, err: Exception) -> DataError:
    """An OpenML failure as one line: what the server said, or that it is unreachable and not cached."""
    import openml

    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if isinstance(err, openml.exceptions.OpenMLServerException):
        return DataError(f"OpenML {what}: the server answered: {text}")
    return DataError(
        f"OpenML {what}: could not load it ({type(err).__name__}: {text}). OpenML is unreachable and it is "
        f"not in the local cache ({openml.config.get_cache_directory()}). Connect once with `attnbench fetch "
        f"SUITE`, or point --openml-cache at a cache that has it."
    )


def load_openml_task(task_id: int, name: str | None = None) -> RawDataset:
    import openml

    try:
        with network_timeout():
            task: Any = openml.tasks.get_task(  # a supervised task: it has target_name
                task_id, download_splits=True, download_data=True, download_qualities=False,
                download_features_meta_data=False,
            )
            dataset = task.get_dataset()
            x, y, cat_mask, names = dataset.get_data(target=task.target_name)
    except DataError:
        raise
    except Exception as err:  # the client raises many types (HTTP, XML, arff, cache); all mean "not loadable"
        raise openml_error(f"task {task_id}", err) from err
    x = pd.DataFrame(x, columns=names)
    for c, is_cat in zip(names, cat_mask):
        if is_cat and not isinstance(x[c].dtype, pd.CategoricalDtype):
            x[c] = x[c].astype("category")
    kind = task.task_type_id
    if kind == openml.tasks.TaskType.SUPERVISED_REGRESSION:
        task_type = "regression"
    elif kind == openml.tasks.TaskType.SUPERVISED_CLASSIFICATION:
        task_type = "binary" if pd.Series(y).nunique() == 2 else "multiclass"
    else:
        raise DataError(f"OpenML task {task_id} is a {kind.name} task; only classification and regression run here")
    repeats, folds, _samples = task.get_split_dimensions()
    rows = []
    for r in range(repeats):
        for f in range(folds):
            train, test = task.get_train_test_split_indices(fold=f, repeat=r, sample=0)
            rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": train, "role": "train"}))
            rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": test, "role": "test"}))
    return validate(RawDataset(
        name=name or dataset.name,
        source=source_of(OpenMLTask(openml_task=task_id)),
        features=x,
        y=pd.Series(y, name=task.target_name).reset_index(drop=True),
        task_type=task_type,
        target=task.target_name,
        openml_id=int(dataset.dataset_id),
        openml_task_id=task_id,
        folds=pd.concat(rows, ignore_index=True),
        description=(dataset.description or "")[:2000],
    ))


def openml_suite_tasks(suite_id: int | str) -> list[int]:
    import openml

    try:
        with network_timeout():
            suite = openml.study.get_suite(suite_id)
    except Exception as err:  # see load_openml_task
        raise openml_error(f"suite {suite_id}", err) from err
    return [int(t) for t in (suite.tasks or [])]

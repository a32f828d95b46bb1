"""Peak memory is the trial's own: the same figure on a fresh worker and on one that ran other trials
(one model per library set, after a larger fit of its own), and memory the allocator kept from an earlier
block is counted again when a later block needs it."""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pipeline.cost import Measure
from pipeline.data.preprocess import FoldData, Part, build_fold
from pipeline.engine.records import TrialRequest
from pipeline.learners.resolve import resolve_name
from pipeline.models.registry import REGISTRY
from pipeline.train.precision import CPU_BF16_FLAGS, _cpu_flags

# The torch models train as `amp: auto` would on this CPU (the tests' session forces fp32 otherwise):
# in bf16 where the CPU has native bf16, whose kernels oneDNN keeps between trials (pipeline.cost).
TORCH_AMP = "bf16" if any(f in _cpu_flags() for f in CPU_BF16_FLAGS) else "off"


def _touch(n_bytes: int) -> float:
    a = np.ones(n_bytes // 8)
    a += 1.0
    return float(a[-1])


def test_memory_the_allocator_kept_from_before_is_counted_again():
    """A block that reuses memory an earlier one freed (the C allocator keeps it) still needs that
    memory: the figure is the same the first time and after."""
    with Measure() as first:
        _touch(24 * 2**20)
    for _ in range(3):  # glibc now serves blocks of this size from memory it keeps after a free
        _touch(24 * 2**20)
    with Measure() as again:
        _touch(24 * 2**20)
    assert first.usage.peak_cpu_mb == pytest.approx(24, rel=0.05)
    assert again.usage.peak_cpu_mb == pytest.approx(24, rel=0.05)


def wide_fold(n: int = 3000, n_features: int = 24):
    """A seeded three-class task large enough that a trial's memory is mostly its arrays and models."""
    rng = np.random.default_rng(0)
    x = pd.DataFrame(rng.normal(size=(n, n_features)), columns=[f"f{i}" for i in range(n_features)])
    y = pd.Series(np.digitize(x.f0 + x.f1 * x.f2, [-0.5, 0.5]).astype(str))
    ids = rng.permutation(n)
    parts = np.split(ids, [n // 2, 3 * n // 4])
    return build_fold(x, y, "multiclass", sorted(y.unique()), *(np.sort(p) for p in parts))


def request(name: str, index: int, **fixed) -> TrialRequest:
    if "amp" in REGISTRY[name].config_defaults():
        fixed = {"amp": TORCH_AMP, **fixed}
    model = resolve_name(name, **fixed)
    return TrialRequest(cell_id="c", trial_id=f"t{index}", trial_index=index, suggestion=index, attempt=1, model=model,
                        config={}, seed=0, data_key="digits", cpus=1, gpus=0, workers=1, backend="auto",
                        trial_timeout_s=300, attention=False)


@pytest.mark.slow
def test_a_trial_measures_the_same_on_a_fresh_worker_and_after_other_trials(ray_local):
    import ray

    from pipeline.engine.worker import TrialWorker

    data = wide_fold()
    ref = ray.put(data)
    # One model per allocator, as the test below picks them (the MLP shares FT-Transformer's torch allocator and
    # runs among the others): two workers, one round.
    measured = {"xgboost": request("xgboost", 0, n_estimators=30, max_depth=8),
                "ft_transformer": request("ft_transformer", 6, max_epochs=1, d_token=64, n_blocks=2)}
    others = [request("mlp", 2, max_epochs=1, d_block=1024, n_blocks=3), request("catboost", 3, iterations=40),
              request("ft_transformer", 4, max_epochs=1, d_token=128, n_blocks=1),
              request("xgboost", 5, n_estimators=40, max_depth=10)]
    figures: dict[str, list[float]] = {}
    pending: dict[Any, tuple[str, Any, list[Any]]] = {}
    names = list(measured)
    while names or pending:
        while names and len(pending) < 2:  # two workers at a time, one CPU each (the session's Ray has two)
            name = names.pop(0)
            req = measured[name]
            worker = ray.remote(TrialWorker).options(num_cpus=1).remote()
            # Warm-up fits take the registry's defaults: one per model name.
            warm = list({r.model.name: (r.model, "multiclass") for r in [req, *others]}.values())
            # Calls on one actor run in order: warm-up, the fit on the fresh worker, the others, the fit again.
            calls = [worker.ready.remote(["torch", "xgboost", "catboost"], warm, 1, 0), worker.run.remote(req, [ref]),
                     *(worker.run.remote(other, [ref]) for other in others), worker.run.remote(req, [ref])]
            pending[calls[-1]] = (name, worker, calls)
        [done], _ = ray.wait(list(pending), num_returns=1)
        name, worker, calls = pending.pop(done)
        _, first, *between, after = ray.get(calls)
        ray.kill(worker)
        assert all(r.status == "ok" for r in between), [r.error for r in between]
        assert first.status == after.status == "ok", (first.error, after.error)
        figures[name] = [first.peak_cpu_mb, after.peak_cpu_mb]
    print(pd.DataFrame(figures, index=["fresh", "after others"]))
    # Before: 38 MB fresh and 82 MB after for XGBoost, FT-Transformer from 0.02 to 159 MB.
    for name, (fresh, after) in figures.items():
        assert fresh > 5.0, (name, fresh)  # a real figure, not the allocator's leftovers
        # 25 % or 3 MB, as the test below allows: in whole-suite runs on two loaded cores XGBoost read 13.6 MB
        # fresh and 14.9 after, FT-Transformer 88.5 and 101.1 (the allocator's noise); what this guards against
        # is twice or thousands of times apart.
        assert after == pytest.approx(fresh, rel=0.25, abs=3.0), (name, fresh, after)


def made_up_fold(n: int, n_num: int, n_cat: int, n_classes: int, seed: int) -> FoldData:
    """Seeded rows of a regression (``n_classes=0``) or a classification task, split 2:1:1."""
    rng = np.random.default_rng(seed)
    x_num = rng.normal(size=(n, n_num)).astype(np.float32)
    x_cat = rng.integers(1, 6, size=(n, n_cat)).astype(np.int64)
    z = x_num[:, 0] + x_num[:, 1] * x_num[:, 2]
    if n_classes:
        y = np.digitize(z, np.quantile(z, np.linspace(0, 1, n_classes + 1)[1:-1])).astype(np.int64)
    else:
        y = (z + rng.normal(size=n)).astype(np.float64)
    cut = [0, n // 2, 3 * n // 4, n]
    part = [Part(x_num[a:b], x_cat[a:b], y[a:b]) for a, b in itertools.pairwise(cut)]
    return FoldData(task_type="multiclass" if n_classes else "regression", n_classes=n_classes,
                    num_names=[f"n{i}" for i in range(n_num)], cat_names=[f"c{j}" for j in range(n_cat)],
                    cat_cardinalities=[6] * n_cat, train=part[0], valid=part[1], test=part[2],
                    y_std=1.0 if n_classes else float(y.std()))


def _sized(name: str, index: int, data_key: str, timeout_s: float, **more) -> TrialRequest:
    """The model's warm-up configuration (what makes its fit quick), with ``more`` on top."""
    info = REGISTRY[name]
    req = request(name, index, **{**info.quick_config(), **more})
    return dataclasses.replace(req, data_key=data_key, trial_timeout_s=timeout_s)


def one_model_per_allocator() -> list[str]:
    """What keeps memory between fits is a library's allocator, not an architecture: one registered model
    per set of libraries (the first by name), and for torch a transformer beside a CNN (oneDNN keeps
    convolution primitives and their scratch memory of its own). A model with a library no other has is
    always among them."""
    first: dict[tuple[str, ...], str] = {}
    for name in sorted(REGISTRY):
        first.setdefault(tuple(REGISTRY[name].capabilities.libraries), name)
    return sorted({*first.values(), "ft_transformer", "cbam_cnn"})


def test_one_model_per_library_set_is_measured_and_every_library_is_covered():
    picked = one_model_per_allocator()
    libraries = {tuple(info.capabilities.libraries) for info in REGISTRY.values()}
    assert {tuple(REGISTRY[n].capabilities.libraries) for n in picked} == libraries
    # The two cases this check was written for: CatBoost's own mimalloc, the torch allocator under
    # FT-Transformer; and the CNN beside it is torch's too.
    assert {"catboost", "ft_transformer", "cbam_cnn"} <= set(picked)
    assert tuple(REGISTRY["cbam_cnn"].capabilities.libraries) == tuple(REGISTRY["ft_transformer"].capabilities.libraries)
    assert len(picked) < len(REGISTRY)  # the point of picking: fifteen models took 220 s of the suite


@pytest.mark.slow
def test_every_library_measures_the_same_on_a_fresh_worker_and_after_a_larger_fit(ray_local):
    """For one model per library set (``one_model_per_allocator``), on a worker of its own (its libraries,
    warm as in a run): a small regression fit on the fresh worker, then a fit of the same model on
    10-class data with three times the cells (and where the model has them: batches eight times larger,
    ten times the rounds or trees), then the small fit again. The two small fits must read the same: the
    larger fit's freed memory, kept by an allocator, is not memory the small fit found already there.

    Before: CatBoost read 12.0 MB fresh and 5.7 MB after (its own mimalloc kept the larger fit's pages
    resident; see ``pipeline.cost.MIMALLOC_OPTIONS``); now 10.2-12.3 MB, fresh and after within 2.1 MB."""
    import ray

    from pipeline.engine.worker import TrialWorker

    small, big = made_up_fold(10240, 24, 2, 0, seed=0), made_up_fold(16000, 48, 4, 10, seed=1)
    refs = {"small": ray.put(small), "big": ray.put(big)}

    def start(name: str) -> tuple[Any, Any]:
        info = REGISTRY[name]
        quick, defaults = info.quick_config(), info.config_defaults()
        # Larger in every way the model has: batches, rounds or trees (not more epochs: one is the most a
        # network's larger fit needs, and it may stop at its time limit inside it).
        larger = {key: times * int(quick.get(key, defaults[key])) for key, times in
                  (("batch_size", 8), ("n_estimators", 10), ("iterations", 10)) if key in defaults}
        # A network's larger fit may stop at its time limit inside the first epoch: what it allocated
        # by then is what matters here.
        reqs = [_sized(name, 0, "small", 120), _sized(name, 1, "big", 6, **larger), _sized(name, 2, "small", 120)]
        worker = ray.remote(TrialWorker).options(num_cpus=1).remote()
        ready = worker.ready.remote(list(info.capabilities.libraries),
                                    [(reqs[0].model, "regression"), (reqs[1].model, "multiclass")], 1, 0)
        # Calls on one actor run in order: warm-up, the small fit, the larger one, the small one again.
        runs = [worker.run.remote(r, [refs[r.data_key]]) for r in reqs]
        return worker, [ready, *runs]

    names = one_model_per_allocator()
    figures: dict[str, list[Any]] = {}
    pending: dict[Any, tuple[str, Any, list[Any]]] = {}
    t0 = time.monotonic()
    while names or pending:
        while names and len(pending) < 2:  # two workers at a time, one CPU each (the session's Ray has two)
            name = names.pop(0)
            worker, calls = start(name)
            pending[calls[-1]] = (name, worker, calls)
        [done], _ = ray.wait(list(pending), num_returns=1)
        name, worker, calls = pending.pop(done)
        _, first, larger, after = ray.get(calls)
        ray.kill(worker)
        assert first.status == after.status == "ok", (name, first.error, after.error)
        figures[name] = [first.peak_cpu_mb, larger.peak_cpu_mb, after.peak_cpu_mb]
    print(pd.DataFrame(figures, index=["fresh", "larger", "after"]).T.round(1), f"\n{time.monotonic() - t0:.0f} s")
    for name, (fresh, larger, after) in figures.items():
        # The larger fit needed more than the small one, so pages an allocator kept from it could have
        # served the whole small fit (a network's larger fit stopped inside its first epoch has no figure).
        assert larger is None or larger > fresh, (name, fresh, larger)
        # 25 % or 3 MB, the spread of one fit measured again and again: RealMLP's small fit, eight times
        # on one worker with nothing between, read 23.2-28.7 MB; what a library sets up at its first fit
        # of a real size (after the warm-up's 96 rows) and keeps reads 1-3 MB more fresh than after
        # (LightGBM, CatBoost, the CNNs). What this guards against read 5.7 MB after against 12.0 MB
        # fresh (CatBoost, at these sizes), 0.02 against 159 MB (FT-Transformer). The forests, whose
        # small fits need 3-4 MB, are held to the 3 MB only.
        assert after == pytest.approx(fresh, rel=0.25, abs=3.0), (name, fresh, after)



def test_trial_workers_map_large_blocks_on_huge_pages_where_the_kernel_offers_them(ray_local):
    """A trial worker starts with glibc's hugetlb tunable (pipeline.cost.worker_env): with the kernel's
    transparent huge pages on request (``madvise``) or always, a large block is backed by huge pages, so
    the allocator's pinned policy (every such block mapped afresh) costs far fewer page faults."""
    import ray

    from pipeline.engine.pool import Shape

    def huge_pages_after_a_large_block() -> tuple[str, int]:
        """The GLIBC_TUNABLES the worker started with, and the huge pages (kB) backing a freshly allocated
        16 MiB block (malloc maps a block that size: it is above the pinned threshold)."""
        import os
        import re

        from pipeline.cost import pin_allocator

        pin_allocator()
        block = np.ones(2 * 2**20)  # 16 MiB, written: every page touched
        with open("/proc/self/smaps_rollup") as fh:
            huge = int(re.search(r"AnonHugePages:\s+(\d+) kB", fh.read()).group(1))
        del block
        return os.environ.get("GLIBC_TUNABLES", ""), huge

    probe = ray.remote(huge_pages_after_a_large_block).options(**Shape(1, 0).actor_options())
    tunables, huge_kb = ray.get(probe.remote())
    assert "glibc.malloc.hugetlb=1" in tunables.split(":")
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as fh:
        mode = fh.read()
    offered = "[always]" in mode or "[madvise]" in mode
    assert (huge_kb >= 2048) == offered, (mode, huge_kb)

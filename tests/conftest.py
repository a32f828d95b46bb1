"""Shared fixtures: the shared data folder, a temporary OpenML cache, one local Ray per session."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
OPENML_DATA = SHARED / "data" / "openml"

# Tests train in fp32 on every CPU, so that what they check does not depend on the machine's CPU
# (amp: auto is bf16 where the CPU has AVX512-BF16 or AMX); the tests of bf16 ask for it themselves
# (tests/models/test_precision.py, tests/test_memory.py). Set before any Ray starts: its workers inherit it.
os.environ.setdefault("ATTNBENCH_CPU_BF16", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-stats reporting from the tests' Ray instances


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not OPENML_DATA.is_dir():
        pytest.fail(f"the shared data folder is missing: expected {OPENML_DATA} beside the checkout")
    return OPENML_DATA


@pytest.fixture
def openml_cache(tmp_path: Path):
    """A writable copy of the recorded OpenML cache (the client deletes entries it fails on)."""
    import openml

    src = SHARED / "data" / "openml-cache"
    if not src.is_dir():
        pytest.fail(f"the recorded OpenML cache is missing: {src}")
    dst = tmp_path / "openml-cache"
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = Path(root) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    old_cache, old_server = openml.config._root_cache_directory, openml.config.server  # the root, not the server's folder
    openml.config.set_root_cache_directory(str(dst))
    openml.config.server = "https://test.openml.org/api/v1/xml"
    yield dst
    openml.config.set_root_cache_directory(str(old_cache))
    openml.config.server = old_server


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray for the whole test session, sized for a 2-core CI machine."""
    from pipeline.runner import start_ray

    resources = start_ray(None, num_cpus=2, num_gpus=0)
    yield resources
    import ray

    ray.shutdown()


@pytest.fixture(scope="session")
def ray_address(ray_local) -> str:
    """The session's Ray as an address that a command in a process of its own joins (``--address``), for
    tests that are not about the command's own Ray (whose start alone takes seconds). Its workers find a
    module in the command's working directory, as a local Ray's would (Ray puts it on their path)."""
    import ray

    return ray.get_runtime_context().gcs_address


# `make test` runs the suite on three workers (pytest-xdist, --dist loadfile: a module's tests on one worker,
# so that a module-scoped fixture, a run whose results several tests read, is built once). Longest first,
# so that no long module is left to one worker at the end: these start Ray clusters of their own or train
# every model. The order is the modules' summed durations in a whole-suite run (`--durations=0`, 3 workers on
# 2 cores), longest first; the rest, slow-marked modules before the others, follow in collection order.
LONGEST_FIRST = ("test_interrupts.py", "test_memory.py", "test_faults.py", "test_e2e.py", "test_reference_results.py",
                 "test_dev_suite.py", "test_bookkeeping.py", "test_your_model.py", "test_cluster.py",
                 "test_code_versions.py", "test_tasks.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        if name in LONGEST_FIRST:
            return LONGEST_FIRST.index(name)
        return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)  # stable: each module's tests keep their order

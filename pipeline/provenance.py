"""A run's provenance: the versions of the packages it used, the code's git revision, the hardware."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.spec import SuiteSpec

HARNESS_PACKAGES = ("attnbench", "ray", "scikit-learn", "duckdb", "openml", "numpy", "pandas")


def versions(suite: SuiteSpec | None = None) -> dict[str, str]:
    """The harness's packages' versions, and those of the libraries the suite's models' Learners name
    (torch, xgboost, a user model's own package...)."""
    from importlib.metadata import PackageNotFoundError, version

    from pipeline.models.import_paths import distributions_of

    libraries = sorted({lib for m in (suite.models if suite else []) for lib in m.model_info().capabilities.libraries})
    packages = [*HARNESS_PACKAGES, *(d for lib in libraries for d in distributions_of(lib.split(".")[0]) or [lib])]
    out = {"python": platform.python_version()}
    for pkg in dict.fromkeys(packages):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    return out


def git_revision() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware(resources: dict[str, float]) -> dict[str, Any]:
    import psutil

    return {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            "cpu_model": cpu_model(),
            "cpus_local": os.cpu_count(), "memory_gb_local": round(psutil.virtual_memory().total / 2**30, 1),
            "cluster_cpus": resources.get("CPU", 0), "cluster_gpus": resources.get("GPU", 0)}

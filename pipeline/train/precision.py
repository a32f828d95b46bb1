"""Which precision a torch trial trains in: the recipe's ``amp`` resolved on its device.

``amp: auto`` (the default) is bf16 where the device has native bf16 matrix units: a CUDA GPU that
supports bf16, or a CPU with AVX512-BF16 or AMX (Intel Sapphire Rapids and later, AMD Zen 4 and later);
fp32 elsewhere, where bf16 would be emulated and slower. ``bf16`` and ``fp16`` ask for it anywhere
(fp16 trains with a gradient scaler); ``off`` is fp32. Low precision is autocast: the weights, the
optimiser state, the loss and every reduction stay fp32, and the matrix products (and the ops autocast
lists) run in the low dtype, each weight cast once per step. ``ATTNBENCH_CPU_BF16=0`` (or 1) says the
CPU has no (or has) native bf16, overriding what it reports: for tests, and for a CPU the check misreads.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

AMP = ("auto", "off", "bf16", "fp16")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: no flags to read, so no claim of native bf16
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_has_bf16() -> bool:
    """The CPU multiplies bf16 matrices natively (AVX512-BF16 or AMX-BF16)."""
    forced = os.environ.get("ATTNBENCH_CPU_BF16")
    if forced in ("0", "1"):
        return forced == "1"
    return any(f in _cpu_flags() for f in CPU_BF16_FLAGS)


def resolve_precision(amp: str, device_type: str) -> str:
    """``fp32``, ``bf16`` or ``fp16``: what a trial with this ``amp`` trains in on this device."""
    if amp not in AMP:
        raise ValueError(f"amp {amp!r}: one of {', '.join(AMP)}")
    if amp == "off":
        return "fp32"
    if amp in ("bf16", "fp16"):
        return amp
    if device_type == "cuda":
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if device_type == "cpu" and cpu_has_bf16() else "fp32"

"""A NumPy twin of PyTorch's CPU random generator, enough to regenerate the embedding chapter's
inputs (seed 004 §21.1–§21.2 draw them after ``torch.manual_seed(42)``) without installing torch.

PyTorch's CPU generator is a 32-bit Mersenne Twister seeded with ``init_genrand(seed)`` — the
stream of ``numpy.random.MT19937`` under its legacy seeding. On it:

- ``torch.rand`` (float32): each value takes one 32-bit word ``w``: ``(w & (2²⁴ − 1)) · 2⁻²⁴``;
- ``torch.randint(low, high)`` (range below 2³²): ``low + w % (high − low)``;
- ``torch.randn`` (float32, 16 values or more): uniforms as ``torch.rand``, then Box–Muller on
  every block of 16 (``u1 = 1 − x[j]``, ``u2 = x[j + 8]``, ``r = sqrt(−2 log u1)``,
  ``x[j] = r cos 2πu2``, ``x[j + 8] = r sin 2πu2``); when the count is not a multiple of 16 the
  last 16 values are drawn again from 16 fresh uniforms and transformed.

Checked once against torch 2.13.0 (CPU): equal values to float32 rounding of the transcendental
functions (the chapter prints 4 decimals).
"""

from __future__ import annotations

import numpy as np


class TorchGenerator:
    """``torch.manual_seed(seed)`` and the three draws above, in the same order of words."""

    def __init__(self, seed: int = 42) -> None:
        self._bits = np.random.MT19937(0)
        self._bits._legacy_seeding(seed)

    def _words(self, count: int) -> np.ndarray:
        return self._bits.random_raw(count).astype(np.uint64) & np.uint64(0xFFFFFFFF)

    def rand(self, *shape: int) -> np.ndarray:
        count = int(np.prod(shape))
        words = self._words(count)
        return ((words & np.uint64((1 << 24) - 1)).astype(np.float32) * np.float32(2.0**-24)).reshape(shape)

    def randint(self, low: int, high: int, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape))
        return (low + (self._words(count) % np.uint64(high - low)).astype(np.int64)).reshape(shape)

    def randn(self, *shape: int) -> np.ndarray:
        count = int(np.prod(shape))
        values = self.rand(count).astype(np.float32)
        if count < 16:
            raise NotImplementedError("torch draws fewer than 16 normals another way")
        whole = count - count % 16
        values[:whole] = _box_muller(values[:whole])
        if count % 16:
            values[count - 16:] = _box_muller(self.rand(16).astype(np.float32))
        return values.reshape(shape)


def _box_muller(uniforms: np.ndarray) -> np.ndarray:
    blocks = uniforms.reshape(-1, 16).astype(np.float32)
    u1 = np.float32(1.0) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    theta = np.float32(2.0 * np.pi) * u2
    out = np.empty_like(blocks)
    out[:, :8] = radius * np.cos(theta)
    out[:, 8:] = radius * np.sin(theta)
    return out.ravel()

"""Fixed-width digests (text digests, row hashes) found by their first eight bytes in a sorted array, each candidate
then compared whole: millions of them cost two arrays, not a dict of millions of ``bytes`` objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class DigestIndex:
    """Where each of a set of digests is: ``keys`` (their first eight bytes) sorted, ``rows`` the digest behind each.
    Two digests sharing a key are rare (2**-64 a pair) and cost a miss, never a wrong row: a caller treats a digest
    not found as one it does not hold (it analyses the text again, or sends the row's text)."""

    digests: npt.NDArray[np.uint8]
    keys: npt.NDArray[np.uint64]
    rows: npt.NDArray[np.int64]

    @classmethod
    def of(cls, digests: npt.NDArray[np.uint8], *, by_key: bool = False) -> DigestIndex:
        """The index of ``digests`` (an (n, width) byte array); ``by_key`` when they are in key order already."""
        keys = digest_keys(digests)
        rows = np.arange(len(keys), dtype=np.int64) if by_key else np.argsort(keys, kind="stable").astype(np.int64)
        return cls(digests, keys if by_key else keys[rows], rows)

    def rows_of(self, asked: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        """For each asked digest (an (m, width) byte array), its row among the indexed ones, or -1."""
        if not len(self.keys) or not len(asked):
            return np.full(len(asked), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, digest_keys(asked)), len(self.keys) - 1)
        candidates = self.rows[at]
        whole = np.all(self.digests[candidates] == asked, axis=1)
        return np.where(whole, candidates, -1)


def as_rows(joined: bytes, width: int) -> npt.NDArray[np.uint8]:
    """Digests joined into one ``bytes`` as an (n, width) byte array, without a copy."""
    return np.frombuffer(joined, dtype=np.uint8).reshape(-1, width)


def digest_keys(digests: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """Each digest's first eight bytes as a little-endian number."""
    return np.ascontiguousarray(digests[:, :8]).view("<u8").ravel().astype(np.uint64)

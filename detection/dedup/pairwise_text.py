"""PairwiseDedup's text feature (FBDetect §5.5.2): cosine similarity of TF-IDF character
2–3-gram vectors of series ids.

Complexity: a dense product over the common n-grams plus a sparse one over the rare, per block.
Design: docs/design/pairwise_dedup.md ("text").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

__all__ = ["TextSimilarity"]

DENSE_GRAM_SHARE = 0.01  # n-grams in more than 1% of the ids go to the dense product


class TextSimilarity:
    """Cosine similarity of TF-IDF character 2–3-gram vectors of series ids (L2-normalised, so
    cosine = dot product): n-grams common to many ids in a dense product, the rest sparse."""

    def __init__(self, series_ids: Sequence[str]) -> None:
        unique = sorted(set(series_ids))
        index = {s: k for k, s in enumerate(unique)}
        self.row_id = np.array([index[s] for s in series_ids], dtype=np.int64)
        self.dense: np.ndarray | None = None
        self.rare: sparse.csr_matrix | None = None
        try:
            grams = TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(unique)
        except ValueError:  # no id has two characters: no vocabulary, every similarity 0
            return
        grams = sparse.csr_matrix(grams)
        frequency = np.bincount(grams.indices, minlength=grams.shape[1])
        common = frequency > DENSE_GRAM_SHARE * len(unique)
        self.dense = grams[:, np.flatnonzero(common)].toarray()
        self.rare = sparse.csr_matrix(grams[:, np.flatnonzero(~common)])
        self.rare_t = sparse.csr_matrix(self.rare.T)

    def block(self, lo: int, hi: int, width: int) -> np.ndarray:
        """(hi - lo, width): similarity of the ids of rows ``lo:hi`` and rows ``0:width``."""
        ids, inverse = np.unique(self.row_id[lo:hi], return_inverse=True)
        similarity = np.zeros((len(ids), int(self.row_id.max(initial=-1)) + 1))
        if self.dense is not None and self.rare is not None:
            similarity += self.dense[ids] @ self.dense.T
            similarity += (self.rare[ids] @ self.rare_t).toarray()
        return np.clip(similarity[inverse][:, self.row_id[:width]], 0.0, 1.0)

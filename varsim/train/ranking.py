"""Ranking vs dispersion: why a model errs at a set size, read from the attention of its last block.

The class is read from the query token's state after the last block, whose attention output of head ``h`` is
``o_h = sum_i w_hi v_hi = w_hc v_hc + sum_{i != c} w_hi v_hi`` (``c`` the task's correct item,
:meth:`varsim.tasks.Task.correct_item`). An error has one of two causes:

- **ranking**: the head's largest weight is on another item (its top logit is wrong);
- **dispersion**: the largest weight is on the correct item, but ``w_hc`` is too small against the spread of the
  rest, whose variance grows with ``sum_{i != c} w_hi^2`` (THEORY: the output variance is ``sigma_v^2 E[sum w^2]``,
  and the signal is the weight on the margin item).

A sharpening map (softmax at an inverse temperature ``f >= 1``: SSMax, log-N, critical, adaptive temperature; top-k)
keeps the order of the logits, so it can only move weight towards the item that is already largest: it repairs
dispersion errors (as ``f`` grows, ``w_hc -> 1`` and ``sum_{i != c} w_hi^2 -> 0`` exactly when ``c`` is the top
item) and cannot repair ranking errors (it moves weight onto the wrong item). So the accuracy given
ranking-correct is the ceiling a sharpening map approaches, and ``P(ranking correct)`` bounds what it can reach;
the ``oracle`` control (all weight on ``c``) has ranking correct by construction.

"Best head": the head of the last block with the largest mean weight on the correct item over all examples at
that set size, one head for all of them (chosen per set size). The probes' ``attn_correct.max_head`` instead takes
each example's largest weight on the correct item over heads, which would choose the head with the answer in hand.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RankingTally"]


class RankingTally:
    """Accumulates, per head of the last block, the counts that decompose accuracy at one set size.

    ``add(weights (B, H, N), correct_item (B,), hit (B,) bool)`` per chunk of examples; :meth:`result` gives the best
    head's numbers."""

    def __init__(self):
        self.n = 0
        self.weight_sum = None  # (H,) sum over examples of the weight on the correct item
        self.rank_ok = None  # (H,) examples whose largest weight is on the correct item
        self.rank_ok_hit = None  # (H,) of those, correctly classified
        self.hits = 0

    def add(self, weights: np.ndarray, correct_item: np.ndarray, hit: np.ndarray) -> None:
        w = np.asarray(weights, dtype=np.float64)
        b, h, _ = w.shape
        rows = np.arange(b)
        wc = w[rows, :, correct_item]  # (B, H)
        ok = np.argmax(w, axis=-1) == correct_item[:, None]  # (B, H)
        hit = np.asarray(hit, dtype=bool)
        if self.weight_sum is None:
            self.weight_sum, self.rank_ok, self.rank_ok_hit = np.zeros(h), np.zeros(h, np.int64), np.zeros(h, np.int64)
        self.weight_sum += wc.sum(axis=0)
        self.rank_ok += ok.sum(axis=0)
        self.rank_ok_hit += (ok & hit[:, None]).sum(axis=0)
        self.hits += int(hit.sum())
        self.n += b

    def result(self) -> dict:
        """``{"best_head", "weight_correct", "ranking_correct", "n_ranking_correct", "n_ranking_wrong",
        "accuracy_given_ranking_correct", "accuracy_given_ranking_wrong", "correct_given_ranking_correct",
        "correct_given_ranking_wrong"}`` (an accuracy is None when its condition never occurs)."""
        h = int(np.argmax(self.weight_sum))
        n_ok = int(self.rank_ok[h])
        hit_ok = int(self.rank_ok_hit[h])
        n_bad, hit_bad = self.n - n_ok, self.hits - hit_ok
        return {
            "best_head": h,
            "weight_correct": float(self.weight_sum[h] / self.n),
            "ranking_correct": n_ok / self.n,
            "n_ranking_correct": n_ok,
            "n_ranking_wrong": n_bad,
            "accuracy_given_ranking_correct": hit_ok / n_ok if n_ok else None,
            "accuracy_given_ranking_wrong": hit_bad / n_bad if n_bad else None,
            "correct_given_ranking_correct": hit_ok,
            "correct_given_ranking_wrong": hit_bad,
        }

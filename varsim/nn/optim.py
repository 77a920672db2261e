"""Adam and AdamW with global-norm gradient clipping and a warmup + cosine learning-rate schedule.

The optimizers update a ``{name: array}`` parameter dict in place (same arrays, same dtype), so a model that owns
the dict sees the new values without copying. Moments are kept in each parameter's dtype, as PyTorch does, and
every operation is deterministic: the same gradients on the same state give bitwise the same parameters, which
is what makes an interrupted-and-resumed training run equal to an uninterrupted one.

Weight decay applies to matrices only (``ndim >= 2``: projection weights and embedding tables); biases, LayerNorm
gains and the learned query vector are not decayed, since shrinking them toward zero has no regularizing meaning.
Pass ``decay=`` (a predicate on ``(name, array)``) to choose otherwise.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np

from varsim._common.registry import lookup
from varsim._common.validate import check_int, check_real

__all__ = ["LRSchedule", "Adam", "AdamW", "global_norm", "make_optimizer", "OPTIMIZERS"]


def _decay_matrices(name: str, value: np.ndarray) -> bool:
    return value.ndim >= 2


def global_norm(grads: Mapping[str, np.ndarray]) -> float:
    """sqrt of the sum of squares of every gradient entry, accumulated in float64."""
    total = 0.0
    for g in grads.values():
        g64 = np.asarray(g, dtype=np.float64).ravel()
        total += float(np.dot(g64, g64))
    return math.sqrt(total)


class LRSchedule:
    """Learning rate of update ``t`` (0-based): linear warmup, then cosine decay (or constant).

    For ``t < warmup`` the rate rises linearly, ``lr * (t + 1) / warmup``, so the first update is already non-zero.
    After warmup it follows ``lr * (r + (1 - r) * (1 + cos(pi * p)) / 2)`` with ``p`` going from 0 at the end of
    warmup to 1 at ``total`` (and staying there), ``r = min_ratio``. With ``total=None`` the rate stays at ``lr``.
    """

    def __init__(self, lr: float, *, warmup: int = 0, total: int | None = None, min_ratio: float = 0.0):
        self.lr = check_real("lr", lr, minimum=0.0, strict_min=True)
        self.warmup = check_int("warmup", warmup, minimum=0)
        self.total = None if total is None else check_int("total", total, minimum=1)
        self.min_ratio = check_real("min_ratio", min_ratio, minimum=0.0, maximum=1.0)
        if self.total is not None and self.warmup > self.total:
            raise ValueError(f"warmup ({self.warmup}) must not exceed total ({self.total})")

    def __call__(self, t: int) -> float:
        if t < self.warmup:
            return self.lr * (t + 1) / self.warmup
        if self.total is None:
            return self.lr
        span = max(self.total - self.warmup, 1)
        p = min(max((t - self.warmup) / span, 0.0), 1.0)
        return self.lr * (self.min_ratio + (1.0 - self.min_ratio) * 0.5 * (1.0 + math.cos(math.pi * p)))

    def to_dict(self) -> dict:
        return {"lr": self.lr, "warmup": self.warmup, "total": self.total, "min_ratio": self.min_ratio}


class Adam:
    """Adam (Kingma & Ba) with bias correction; ``weight_decay`` is the classic L2 term added to the gradient.

    ``step(grads)`` clips the gradients to global norm ``clip_norm`` (when given; scale
    ``clip_norm / (norm + 1e-6)`` as in PyTorch), then for each parameter p with gradient g, at update t = 1, 2, ...::

        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        p -= lr_t / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

    and returns ``{"lr", "grad_norm" (before clipping), "clipped"}``. Wrong gradient names or shapes (ValueError) and
    a non-finite norm (FloatingPointError) raise before any state, the update count too, changes.
    """

    decoupled = False
    name = "adam"

    def __init__(
        self,
        params: Mapping[str, np.ndarray],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        clip_norm: float | None = None,
        warmup: int = 0,
        total_steps: int | None = None,
        min_lr_ratio: float = 0.0,
        decay: Callable[[str, np.ndarray], bool] | None = None,
    ):
        if not isinstance(params, Mapping) or not params:
            raise ValueError("params must be a non-empty mapping of name -> array")
        for k, p in params.items():
            if not isinstance(p, np.ndarray) or not np.issubdtype(p.dtype, np.floating):
                raise ValueError(f"params[{k!r}] must be a floating-point numpy array")
        self.params = params
        self.schedule = LRSchedule(lr, warmup=warmup, total=total_steps, min_ratio=min_lr_ratio)
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            raise ValueError(f"betas must be a pair, got {betas!r}")
        self.beta1 = check_real("betas[0]", betas[0], minimum=0.0, maximum=1.0)
        self.beta2 = check_real("betas[1]", betas[1], minimum=0.0, maximum=1.0)
        if self.beta1 >= 1.0 or self.beta2 >= 1.0:
            raise ValueError(f"betas must be < 1, got {tuple(betas)!r}")
        self.eps = check_real("eps", eps, minimum=0.0, strict_min=True)
        self.weight_decay = check_real("weight_decay", weight_decay, minimum=0.0)
        self.clip_norm = None if clip_norm is None else check_real("clip_norm", clip_norm, minimum=0.0, strict_min=True)
        decay = _decay_matrices if decay is None else decay
        self.decayed = {k: bool(decay(k, p)) for k, p in params.items()}
        self.t = 0  # updates done
        # One pass per parameter (varsim.nn._optim_kernels.adam_update): every entry read and written once.
        self.m = {k: np.zeros(p.shape, dtype=p.dtype) for k, p in params.items()}
        self.v = {k: np.zeros(p.shape, dtype=p.dtype) for k, p in params.items()}

    @property
    def lr(self) -> float:
        """The learning rate the next update will use."""
        return self.schedule(self.t)

    def step(self, grads: Mapping[str, np.ndarray]) -> dict:
        if set(grads) != set(self.params):
            missing, extra = set(self.params) - set(grads), set(grads) - set(self.params)
            raise ValueError(f"grads must have the parameter names; missing {sorted(missing)}, extra {sorted(extra)}")
        for k, p in self.params.items():
            if np.shape(grads[k]) != p.shape:
                raise ValueError(f"grads[{k!r}] has shape {np.shape(grads[k])}, parameter has {p.shape}")
        norm = global_norm(grads)
        if not math.isfinite(norm):
            raise FloatingPointError(f"non-finite gradient norm at update {self.t + 1}")
        scale = 1.0
        if self.clip_norm is not None and norm > self.clip_norm:
            scale = self.clip_norm / (norm + 1e-6)
        lr = self.schedule(self.t)
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        step_size = lr / (1.0 - b1**self.t)
        sqrt_bc2 = math.sqrt(1.0 - b2**self.t)
        from varsim.nn._optim_kernels import adam_update

        constants = [scale, 1.0 - lr * self.weight_decay, self.weight_decay, b1, 1.0 - b1, b2, 1.0 - b2, sqrt_bc2,
                     self.eps, step_size]  # CONSTANTS of varsim.nn._optim_kernels
        by_dtype: dict = {}  # the constants rounded once per parameter dtype
        for k, p in self.params.items():
            c = by_dtype.get(p.dtype)
            if c is None:
                c = by_dtype[p.dtype] = np.array(constants, dtype=p.dtype)
            flat = p.reshape(-1)  # a view of a contiguous parameter
            adam_update(flat, np.ascontiguousarray(grads[k], dtype=p.dtype).reshape(-1), self.m[k].reshape(-1),
                        self.v[k].reshape(-1), self.decayed[k] and self.weight_decay != 0.0, self.decoupled, c)
            if not np.shares_memory(flat, p):
                p[...] = flat.reshape(p.shape)
        return {"lr": lr, "grad_norm": norm, "clipped": scale != 1.0}

    def hyperparameters(self) -> dict:
        return {
            "name": self.name,
            "betas": [self.beta1, self.beta2],
            "eps": self.eps,
            "weight_decay": self.weight_decay,
            "clip_norm": self.clip_norm,
            "schedule": self.schedule.to_dict(),
            "decayed": sorted(k for k, d in self.decayed.items() if d),
        }

    def state_dict(self) -> dict:
        """``{"t", "m": {name: array}, "v": {...}, "hyperparameters"}``; arrays are copies."""
        return {
            "t": self.t,
            "m": {k: a.copy() for k, a in self.m.items()},
            "v": {k: a.copy() for k, a in self.v.items()},
            "hyperparameters": self.hyperparameters(),
        }

    def load_state_dict(self, state: Mapping) -> None:
        """Restore moments and update count exactly; refuse a state from different parameters or settings."""
        try:
            t, m, v, hyper = state["t"], state["m"], state["v"], state["hyperparameters"]
        except (KeyError, TypeError):
            raise ValueError("optimizer state must have keys 't', 'm', 'v', 'hyperparameters'") from None
        if hyper != self.hyperparameters():
            raise ValueError(
                f"optimizer state was saved with different settings: {hyper!r} != {self.hyperparameters()!r}"
            )
        for label, src in (("m", m), ("v", v)):
            if set(src) != set(self.params):
                raise ValueError(f"optimizer state {label!r} does not match the parameter names")
            for k, p in self.params.items():
                a = np.asarray(src[k])
                if a.shape != p.shape or a.dtype != p.dtype:
                    raise ValueError(
                        f"optimizer state {label}[{k!r}] is {a.dtype}{a.shape}, parameter is {p.dtype}{p.shape}"
                    )
        self.t = check_int("t", t, minimum=0)
        for k in self.params:
            self.m[k][...] = m[k]
            self.v[k][...] = v[k]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr_t * weight_decay`` before the Adam
    update, on the decayed parameters only (matrices by default)."""

    decoupled = True
    name = "adamw"

    def __init__(self, params, *, weight_decay: float = 0.01, **kwargs):
        super().__init__(params, weight_decay=weight_decay, **kwargs)


#: optimizer name -> class
OPTIMIZERS = {"adam": Adam, "adamw": AdamW}


def make_optimizer(name: str, params: Mapping[str, np.ndarray], **kwargs) -> Adam:
    """``"adam"`` or ``"adamw"`` by name (``OPTIMIZERS``), with the keyword arguments of :class:`Adam`."""
    return lookup(OPTIMIZERS, name, param="optimizer")(params, **kwargs)

"""Architectures: which model a :class:`~varsim.nn.config.ModelConfig` builds, and what it costs.

One entry per model family, read by everything that builds or budgets a model (training, checkpoints, evaluation,
:mod:`varsim.train.budget`): ``build(config, seed, **kwargs)`` makes the model, ``cost`` is a module with its
parameter shapes, multiply-adds, elementwise work and activation memory (the functions of
:mod:`varsim.nn.set_cost` for the set transformer), and ``sizes(config)`` lists the config's size fields with their
defaults (the budget names the one furthest above its default when a cost is too high).

Each model's module registers its entry (``"set_transformer"``: :mod:`varsim.nn.model`; ``"decoder"``:
:mod:`varsim.nn.decoder`), and :mod:`varsim.nn` imports it. Adding a model: its module (a subclass of
:class:`varsim.nn.base.Model` defining what its docstring lists, and one :func:`register_architecture` call), its
parameter table and cost modules, its import in ``varsim/nn/__init__.py``, and any fields it needs in
:class:`~varsim.nn.config.ModelConfig`.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Callable

from varsim._common.registry import Registry

__all__ = ["Architecture", "ARCHITECTURES", "get_architecture", "register_architecture", "build_model"]


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A model family: ``build(config, seed, **kwargs) -> model`` (the model class), its ``cost`` module,
    ``sizes``, and whether it is a ``sequence`` model."""

    name: str
    description: str
    build: Callable
    cost: ModuleType
    sizes: Callable
    #: the model reads its tokens in order: it takes the config's ``positions``/``max_positions``/``tie_head`` and
    #: tasks whose items are several tokens (:attr:`varsim.tasks.Task.item_tokens`)
    sequence: bool = False


#: name -> Architecture: ``register_architecture`` adds one (a name taken raises), ``get_architecture`` finds one
ARCHITECTURES = Registry("architecture", kind=Architecture)
register_architecture = ARCHITECTURES.add
"""Add an :class:`Architecture` to :data:`ARCHITECTURES` under its name; a name already registered is refused."""
get_architecture = ARCHITECTURES.find
"""The architecture named ``name``; ValueError naming the parameter for an unknown name."""


def build_model(config, seed=0, **kwargs):
    """The model of ``config`` (its ``architecture``), initialized from ``seed``; ``kwargs`` go to the model
    (``memory_budget``)."""
    return get_architecture(config.architecture).build(config, seed, **kwargs)

"""Helpers of the testing-kit tests (tests/test_testing_example.py, tests/test_testing_mutants.py,
tests/test_testing_backward.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: the docs' complete example of testing one's own attention, and the tests it defines
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "site" / "examples" / "test_my_attention.py"
EXAMPLE_TESTS = ("test_same_draw_battery", "test_same_draw_drawn_cases", "test_my_attention_matches_the_theory")


#: the docs' Hugging Face-style eager attention in torch (every feature of the gradient battery)
HF_EAGER = EXAMPLE.parent / "hf_eager_attention.py"


def load_file(path: Path, module_name: str):
    """The Python file ``path`` as a fresh module named ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_example(module_name: str = "varsim_docs_example"):
    """A fresh module of the docs example (its ``my_attention`` may be replaced by the caller)."""
    return load_file(EXAMPLE, module_name)

"""The Examples sections of the public API's docstrings run as written (doctest): an example that no longer runs,
or prints something else than its docstring says, fails here before a reader copies it from the API pages."""

import doctest
import importlib

import pytest

#: modules whose docstrings carry Examples (each must have at least one)
MODULES = [
    "varsim.testing.precision",
    "varsim.testing.same_draw",
    "varsim.testing.attention",
    "varsim.testing.cases",
    "varsim.testing.arrays",
    "varsim.testing.checks",
    "varsim.testing.profiles",
    "varsim.testing.reference",
    "varsim.testing.config",
    "varsim.testing.strategies",
    "varsim.testing.power",
    "varsim.testing.mutants",
    "varsim.testing.backward",
    "varsim.testing.grad_reference",
    "varsim.testing.grad_precision",
    "varsim.testing.grad_cases",
    "varsim.testing.grad_mutants",
    "varsim.testing.grad_power",
    "varsim.testing.families",
    "varsim.train.config",
    "varsim.train.loop",
    "varsim.train.checkpoint",
    "varsim.train.metrics",
    "varsim.train.evaluate",
    "varsim.plotting",
    "varsim.style",
    "varsim.theory.remedies",
]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_the_docstrings_run_as_written(name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{name}: no Examples to run"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)

"""Refactors keep varsim's numbers: simulators, training and a reproduction run match fingerprints made at a
known-good commit (tests/data/golden.json, written by ``python tests/golden_outputs.py --write``).

On the machine kind the fingerprints were made on (same CPU model, BLAS kernel, NumPy and Numba) the numbers must be
bitwise-identical; elsewhere the recorded values must agree within 1e-6 relative (training: 1e-4, since BLAS kernels
differ in summation order). Catches: a changed draw order, a reordered reduction, a seed keyed differently, a
changed default in a refactor.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from golden_outputs import GOLDEN, current, machine

pytestmark = pytest.mark.kernel_sensitive  # .ci/run runs these again under another BLAS kernel


@pytest.fixture(scope="module")
def outputs():
    return current()


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text())


def _same_machine(recorded: dict) -> bool:
    now = machine()
    return all(now[k] == recorded[k] for k in ("cpu", "machine", "blas", "numpy", "numba"))


def test_every_computation_has_a_fingerprint(outputs, golden):
    assert sorted(outputs) == sorted(golden["outputs"])


@pytest.mark.parametrize("name", sorted(json.loads(GOLDEN.read_text())["outputs"]))
def test_numbers_unchanged(name, outputs, golden):
    got, want = outputs[name], golden["outputs"][name]
    if _same_machine(golden["machine"]):
        assert got["sha256"] == want["sha256"], (name, got["values"], want["values"])
    else:
        rtol = 1e-4 if name.startswith(("train", "reproduction")) else 1e-6
        np.testing.assert_allclose(got["values"], want["values"], rtol=rtol, err_msg=name)

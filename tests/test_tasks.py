"""Task generators: targets, distinct keys, masks, seeding, distributions, large N, bad input."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from registry_checks import check_task_batches, check_task_in_cli, check_task_models

from varsim.tasks import DEFAULT_TRAIN_RANGE, TASK_REGISTRY, check_set_size, make_batch


def rng(seed=0):
    return np.random.default_rng(seed)


def _brute_argmax_target(b):
    out = []
    for pr, lab, m in zip(b["priority"], b["label"], b["mask"]):
        real = np.flatnonzero(m)
        out.append(lab[real[np.argmax(pr[real])]])
    return np.array(out)


@pytest.mark.parametrize("set_size", [1, 7, (1, 16), (5, 9)])
def test_argmax_target_is_label_of_max_priority_among_real_items(set_size):
    """Catches a target taken over the padding too (a padded item with a larger priority would win)."""
    b = make_batch("argmax", 256, set_size, rng(1), n_classes=7)
    assert b["priority"].dtype == np.float64 and b["label"].dtype == np.int64 and b["mask"].dtype == bool
    assert b["target"].dtype == np.int64 and b["target"].shape == (256,)
    assert b["label"].min() >= 0 and b["label"].max() < 7
    assert np.all((b["priority"] >= 0) & (b["priority"] < 1))
    np.testing.assert_array_equal(b["target"], _brute_argmax_target(b))


def test_mask_is_a_prefix_with_sizes_in_range_and_padding_to_the_batch_max():
    b = make_batch("dictionary", 500, (3, 11), rng(2))
    sizes = b["mask"].sum(axis=1)
    assert sizes.min() == 3 and sizes.max() == 11 and b["mask"].shape == (500, 11)
    np.testing.assert_array_equal(b["mask"], np.arange(11)[None, :] < sizes[:, None])
    # every size in the range occurs (uniform on 3..11, 500 draws)
    assert set(np.unique(sizes)) == set(range(3, 12))
    fixed = make_batch("argmax", 4, 9, rng(2))
    assert fixed["mask"].shape == (4, 9) and fixed["mask"].all()


@pytest.mark.parametrize("set_size,vocab", [(16, 16384), ((2, 16), 16384), (40, 64), (64, 64), ((1, 30), 50)])
def test_dictionary_keys_distinct_query_present_target_is_its_value(set_size, vocab):
    """Covers both key samplers (rejection for N^2 <= V, partial argsort otherwise)."""
    b = make_batch("dictionary", 300, set_size, rng(3), key_vocab=vocab, value_vocab=5)
    key, value, mask = b["key"], b["value"], b["mask"]
    assert key.dtype == value.dtype == b["query"].dtype == b["target"].dtype == np.int64
    assert key.min() >= 0 and key.max() < vocab and value.min() >= 0 and value.max() < 5
    for i in range(key.shape[0]):
        real = key[i][mask[i]]
        assert len(np.unique(real)) == real.size
        hit = np.flatnonzero((key[i] == b["query"][i]) & mask[i])
        assert hit.size == 1  # present, among the real items, exactly once
        assert b["target"][i] == value[i, hit[0]]


def test_dictionary_at_full_vocabulary_is_a_permutation_and_fast():
    """N = key_vocab = 16384 at batch 64 (N at its largest): each row is a permutation of the vocabulary."""
    t0 = time.perf_counter()
    b = make_batch("dictionary", 64, 16384, rng(4))
    elapsed = time.perf_counter() - t0
    np.testing.assert_array_equal(np.sort(b["key"], axis=1), np.broadcast_to(np.arange(16384), (64, 16384)))
    a = make_batch("argmax", 64, 16384, rng(4))
    assert a["priority"].shape == (64, 16384)
    assert elapsed < 2.0  # vectorised: ~30 ms; a per-example Python loop over rejection sampling would be far slower


@pytest.mark.parametrize("n,vocab", [(8, 64), (16, 64)])
def test_key_positions_and_query_choice_are_uniform(n, vocab):
    """The key at each position is uniform on the vocabulary, and the query is a uniform real item.

    Catches samplers that return keys in sorted order (position 0 would hold small ids, and with padding the
    real items would be the smallest keys) and a query always taken from the first or last item.
    Reference: mean key (V-1)/2 with SE sqrt((V^2-1)/12 / B); query position mean (N-1)/2.
    """
    b_size = 4000
    b = make_batch("dictionary", b_size, n, rng(5), key_vocab=vocab)
    sd = np.sqrt((vocab**2 - 1) / 12)
    ref = (vocab - 1) / 2
    for pos in (0, n - 1):
        est = b["key"][:, pos].mean()
        assert abs(est - ref) <= 5 * sd / np.sqrt(b_size) + 0.01 * ref
    qpos = np.argmax(b["key"] == b["query"][:, None], axis=1)
    ref_q, sd_q = (n - 1) / 2, np.sqrt((n**2 - 1) / 12)
    assert abs(qpos.mean() - ref_q) <= 5 * sd_q / np.sqrt(b_size) + 0.01 * ref_q


def test_argmax_target_and_labels_are_uniform_over_classes():
    """Catches a target that favours a class (e.g. labels tied to priority order). Mean label (C-1)/2."""
    c, b_size = 10, 6000
    b = make_batch("argmax", b_size, (1, 16), rng(6), n_classes=c)
    ref, sd = (c - 1) / 2, np.sqrt((c**2 - 1) / 12)
    assert abs(b["target"].mean() - ref) <= 5 * sd / np.sqrt(b_size) + 0.01 * ref
    # the argmax position is uniform among the real items: mean relative position 1/2 for fixed N
    f = make_batch("argmax", b_size, 16, rng(7))
    pos = np.argmax(f["priority"], axis=1)
    assert abs(pos.mean() - 7.5) <= 5 * np.sqrt((16**2 - 1) / 12) / np.sqrt(b_size) + 0.075


@pytest.mark.parametrize("task", list(TASK_REGISTRY))
def test_every_registered_task_draws_valid_batches(task):
    """Schema, sizes, mask prefix, target class, correct item (with keys: the query's), same seed same batch, default
    training range, chance. Catches a task whose correct item is padding or whose target is outside its classes."""
    check_task_batches(task)
    check_task_in_cli(task)


@pytest.mark.parametrize("task", list(TASK_REGISTRY))
def test_every_registered_task_trains_through_every_model_that_reads_it(task):
    """Catches a task whose features do not fit its ``n_features`` or whose layout a model misreads (the gradient
    check of a model built on it fails)."""
    check_task_models(task)


@settings(max_examples=20)
@given(
    task=st.sampled_from(list(TASK_REGISTRY)),
    batch=st.integers(1, 6),
    lo=st.integers(1, 8),
    extra=st.integers(0, 8),
    seed=st.integers(0, 2**16),
)
def test_invariants_on_drawn_shapes(task, batch, lo, extra, seed):
    check_task_batches(task, seed=seed, set_sizes=[(lo, lo + extra)], batch=batch)


def test_default_training_ranges_are_valid():
    for task, rng_ in DEFAULT_TRAIN_RANGE.items():
        assert check_set_size(task, rng_) == rng_


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"task": "sorting"}, "task"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"set_size": 0}, "set_size"),
        ({"set_size": -3}, "set_size"),
        ({"set_size": 2.5}, "set_size"),
        ({"set_size": True}, "set_size"),
        ({"set_size": "16"}, "set_size"),
        ({"set_size": (5, 3)}, "set_size"),
        ({"set_size": (0, 3)}, "set_size[0]"),
        ({"set_size": (1, 2, 3)}, "set_size"),
        ({"set_size": 65, "key_vocab": 64}, "key_vocab"),
        ({"set_size": (2, 65), "key_vocab": 64}, "key_vocab"),
        ({"n_classes": 1}, "n_classes"),
        ({"value_vocab": 0}, "value_vocab"),
        ({"rng": 0}, "rng"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"task": "dictionary", "batch_size": 4, "set_size": 8, "rng": rng()}
    args.update(kwargs)
    task = args.pop("task")
    with pytest.raises(ValueError, match=name.replace("[", r"\[").replace("]", r"\]")):
        make_batch(task, args.pop("batch_size"), args.pop("set_size"), args.pop("rng"), **args)


def test_argmax_has_no_vocabulary_limit_on_set_size():
    b = make_batch("argmax", 2, 70, rng(), key_vocab=64)
    assert b["priority"].shape == (2, 70)


def test_make_batch_refuses_a_batch_larger_than_memory():
    """B x N (and, for the dictionary, B x key_vocab scores) beyond the machine's memory is refused before any
    allocation with a message naming batch_size and set_size, instead of a MemoryError traceback; batch_bytes
    bounds what a real batch holds. Catches a check that forgets the dictionary's key_vocab scores."""
    from varsim.tasks import batch_bytes

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="batch_size=1000000 x set_size=100000000000"):
        make_batch("argmax", 10**6, 10**11, rng)
    with pytest.raises(ValueError, match="batch_size=100000 x set_size=100000"):
        make_batch("dictionary", 10**5, 10**5, rng, key_vocab=10**9)
    b = make_batch("dictionary", 4, 64, rng, key_vocab=1024)
    assert sum(a.nbytes for a in b.values()) <= batch_bytes("dictionary", 4, 64, key_vocab=1024)

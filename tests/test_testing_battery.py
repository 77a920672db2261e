"""The battery sized for real kernels: grouped-query heads, causal lengths across tiles, windows, softcapping,
sinks, fully masked rows, the flash ((B, L, H, d)) and packed variable-length layouts, and the catalogue's bugs
for them.

Wrong implementations caught here: a battery of at most 3 heads and 11 causal keys, where a grouped-query head
mapping bug (``repeat`` instead of ``repeat_interleave``) and a bug at a 64-key tile boundary are invisible; a
NaN-on-empty-rows kernel accepted where zeros were stated, or its NaN leaking into other rows.
"""

import math

import numpy as np
import pytest

from varsim.testing import (
    REFERENCE_CASES,
    AttentionCase,
    adapt,
    check_against_reference,
    families,
    power_report,
    softmax_attention_nd,
)
from varsim.testing.arrays import causal_mask


def _full_mask(q, K, mask, causal):
    L, N = q.shape[-2], K.shape[-2]
    return causal_mask(L, N) if causal else mask


def gqa_attention(q, K, V, tau=1.0, mask=None, causal=False, interleave=True):
    """(B, H, L, d) queries over (B, H_kv, N, d) keys: head h reads key head h // (H / H_kv)."""
    reps = q.shape[1] // K.shape[1]
    if interleave:
        K, V = np.repeat(K, reps, axis=1), np.repeat(V, reps, axis=1)
    else:  # the bug: torch's .repeat / np.tile
        K, V = np.tile(K, (1, reps, 1, 1)), np.tile(V, (1, reps, 1, 1))
    return families.Family()(q, K, V, tau=tau, mask=_full_mask(q, K, mask, causal))  # zeros on a row with no key


def flash_layout(q, K, V, tau=1.0, mask=None, causal=False):
    """(B, L, H, d), as flash-attn takes them; weights (B, H, L, N)."""
    sw = lambda a: np.swapaxes(a, 1, 2)  # noqa: E731
    o, w = gqa_attention(sw(q), sw(K), sw(V), tau=tau, mask=mask, causal=causal)
    return sw(o), w


def packed(q, K, V, cu_seqlens_q, cu_seqlens_k, tau=1.0, causal=False, off_by_one=False):
    """Variable-length sequences packed along the first axis (flash-attn's varlen convention)."""
    out = []
    for b in range(len(cu_seqlens_q) - 1):
        qs = slice(cu_seqlens_q[b], cu_seqlens_q[b + 1])
        ks = slice(cu_seqlens_k[b], cu_seqlens_k[b + 1] + (1 if off_by_one and b == 0 else 0))
        sw = lambda a: np.swapaxes(a, 0, 1)[None]  # noqa: E731 (n, H, d) -> (1, H, n, d)
        o, _ = gqa_attention(sw(q[qs]), sw(K[ks]), sw(V[ks]), tau=tau, causal=causal)
        out.append(np.swapaxes(o[0], 0, 1))
    return np.concatenate(out)


def test_battery_has_grouped_heads_long_causal_tiles_and_a_masked_row():
    gqa = [c for c in REFERENCE_CASES if c.n_kv_heads < c.heads]
    assert any(c.heads >= 4 and c.n_kv_heads == 2 for c in gqa) and any(c.n_kv_heads == 1 for c in gqa)
    lengths = {c.n_keys for c in REFERENCE_CASES if c.mask == "causal"}
    assert {65, 128, 129, 257} <= lengths
    positions = {c.n_keys - c.n_queries + l for c in REFERENCE_CASES if c.mask == "causal"
                 for l in range(c.n_queries)}
    assert {64, 128, 192, 256} <= positions
    assert any(c.empty_rows for c in REFERENCE_CASES)


def test_grouped_query_mapping_bug_fails_and_the_right_mapping_passes():
    good = adapt(gqa_attention, layout="bhld", gqa=True)
    assert check_against_reference(good, masked_rows="zeros").passed
    bad = adapt(lambda q, K, V, tau=1.0, mask=None, causal=False: gqa_attention(q, K, V, tau, mask, causal, False),
                layout="bhld", gqa=True)
    report = check_against_reference(bad)
    failed = {r.case.name for r in report.results if not r.passed}
    assert failed == {"grouped-query"}  # over one key head, repeat and repeat_interleave agree
    assert "kv heads 2" in report.describe()


def test_without_gqa_the_kit_expands_the_keys_itself():
    """A function that takes keys with the query heads (plain SDPA) gets them repeated, so it passes."""
    def plain(q, K, V, tau=1.0, mask=None, causal=False):
        assert K.shape[1] == q.shape[1]
        return softmax_attention_nd(q, K, V, tau=tau, mask=_full_mask(q, K, mask, causal))

    assert check_against_reference(adapt(plain, layout="bhld")).passed


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_tile_and_head_bugs_are_caught_by_the_default_battery(dtype):
    report = power_report(dtype=dtype, seeds=2, returns_weights=False, accepts=("tau", "mask", "causal"),
                          kernels=["flash_tiled", "rounded_probabilities", "causal_tile_skips_diagonal",
                                   "last_partial_tile_dropped", "online_softmax_no_rescale"])
    """Every tile bug fails wherever its error is 10x a correct kernel's, and at one seed at least; in bfloat16 the
    dropped last tile (one key of 65 to 257) passes at seed 0, where its excess is 6.6: within SDPA's model around
    the HF eager logits the default check also accepts (before that it failed only as *low precision*)."""
    assert report.false_alarms[0] == 0
    assert report.missed == (), report.table()
    for bug in ("causal_tile_skips_diagonal", "last_partial_tile_dropped", "online_softmax_no_rescale"):
        row = next(r for r in report.rows if r.name == bug)
        assert row.caught >= (1 if (dtype, bug) == ("bfloat16", "last_partial_tile_dropped") else 2), report.table()


def test_tile_bugs_need_the_long_causal_cases():
    """With the battery of at most 11 causal keys (the cases before this round), the tile bugs pass."""
    short = [c for c in REFERENCE_CASES if c.n_keys <= 24 or c.mask == "none"]
    report = power_report(cases=short, dtype="float32", seeds=1, kernels=["causal_tile_skips_diagonal",
                                                                     "last_partial_tile_dropped"])
    assert report.caught == ()


def test_gqa_bug_is_planted_only_where_the_function_takes_grouped_keys():
    report = power_report(adapt(gqa_attention, layout="bhld", gqa=True), seeds=1,
                          kernels=["reference", "gqa_repeat_not_interleave"])
    assert report.caught == ("gqa_repeat_not_interleave",)
    report = power_report(dtype="float32", seeds=1, kernels=["gqa_repeat_not_interleave"])
    assert "adapt(..., gqa=True)" in report.rows[-1].not_applicable


@pytest.mark.parametrize("family, bug", [
    (families.sliding_window(6), "window_off_by_one"),
    (families.softcap(4.0), "softcap_missing"),
    (families.sinks(), "sink_ignored"),
])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_family_bugs_are_caught_and_correct_family_kernels_pass(family, bug, dtype):
    report = power_report(dtype=dtype, seeds=2, reference=family, returns_weights=False)
    assert report.false_alarms[0] == 0 and report.missed == (), report.table()
    assert bug in report.caught, report.table()
    plain = power_report(dtype=dtype, seeds=1, kernels=[bug])
    assert plain.rows[-1].not_applicable


def test_sinks_reference_takes_weight_away_from_the_keys():
    case = AttentionCase("c", batch=2, heads=3, n_queries=2, n_keys=7)
    q, K, V, _ = case.arrays(0)
    o, w = families.sinks((0.0,))(q, K, V)
    assert np.all(w.sum(axis=-1) < 1.0)
    np.testing.assert_allclose(o, np.matmul(w, V), rtol=1e-12)


def _masked_rows_kernel(convention, leak=False):
    def fn(q, K, V, tau=1.0, mask=None, causal=False):
        m = np.broadcast_to(_full_mask(q, K, mask, causal) if (mask is not None or causal) else True,
                            q.shape[:-1] + (K.shape[-2],))
        s = np.where(m, np.matmul(q, np.swapaxes(K, -1, -2)) * tau / math.sqrt(q.shape[-1]), -np.inf)
        with np.errstate(invalid="ignore"):
            w = np.exp(s - s.max(axis=-1, keepdims=True))
            w = w / w.sum(axis=-1, keepdims=True)  # NaN on a row with no key
        if convention == "zeros":
            w = np.nan_to_num(w)
        o = np.matmul(np.nan_to_num(w) if not leak else w, V)
        if convention == "nan" and not leak:
            o = np.where(np.isnan(w).any(axis=-1, keepdims=True), np.nan, o)
        return o
    return adapt(fn, layout="bhld")


def test_fully_masked_rows_follow_the_stated_convention():
    case = [c for c in REFERENCE_CASES if c.empty_rows]
    zeros, nan = _masked_rows_kernel("zeros"), _masked_rows_kernel("nan")
    assert check_against_reference(zeros, case, masked_rows="zeros").passed
    assert check_against_reference(nan, case, masked_rows="nan").passed
    assert check_against_reference(nan, case, masked_rows="zeros").verdict == "fail"
    assert "expected NaN" in check_against_reference(zeros, case, masked_rows="nan").describe()
    with pytest.raises(ValueError, match="every case was skipped.*masked_rows"):
        check_against_reference(zeros, case)
    with pytest.raises(ValueError, match="masked_rows"):
        check_against_reference(zeros, case, masked_rows="ones")


def test_nan_leaking_from_a_masked_row_into_others_fails():
    """A NaN row whose NaN reaches other outputs (a batched reduction over rows) fails under 'nan'."""
    good = _masked_rows_kernel("nan").fn

    def leaky(q, K, V, tau=1.0, mask=None, causal=False):
        o = good(q, K, V, tau=tau, mask=mask, causal=causal)
        return o + 0.0 * np.nansum(o, axis=-2, keepdims=True) * np.where(np.isnan(o).any(), np.nan, 1.0)

    case = [c for c in REFERENCE_CASES if c.empty_rows]
    report = check_against_reference(adapt(leaky, layout="bhld"), case, masked_rows="nan")
    assert report.verdict == "fail" and "non-finite" in report.describe()


def test_flash_and_packed_layouts():
    assert check_against_reference(adapt(flash_layout, layout="blhd", gqa=True), masked_rows="zeros").passed
    good = adapt(packed, layout="packed", gqa=True)
    report = check_against_reference(good)
    assert report.passed and not any(r.skipped for r in report.results if r.case.mask == "padding"
                                     and not r.case.empty_rows)
    bad = adapt(lambda *a, **k: packed(*a, **k, off_by_one=True), layout="packed", gqa=True, accepts=("tau", "causal"))
    assert check_against_reference(bad).verdict == "fail"
    with pytest.raises(ValueError, match="^gqa: layout 'bld'"):
        adapt(flash_layout, layout="bld", gqa=True)
    with pytest.raises(ValueError, match="^layout: power_report cannot plant into the 'packed'"):
        power_report(good)


def test_flash_layout_power_report():
    report = power_report(adapt(flash_layout, layout="blhd", gqa=True), seeds=1,
                          kernels=["reference", "heads_queries_swapped", "gqa_repeat_not_interleave"])
    assert report.false_alarms == (0, 1) and set(report.caught) == {"heads_queries_swapped",
                                                                    "gqa_repeat_not_interleave"}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_sdpa_with_grouped_query_heads(dtype):
    """PyTorch SDPA with enable_gqa=True passes the battery with grouped keys; with the keys repeated by
    ``.repeat`` (the classic bug) it fails the grouped-query case."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def sdpa(q, K, V, tau=1.0, causal=False, mask=None, wrong=False):
        if causal:
            L, N = q.shape[-2], K.shape[-2]
            mask = torch.ones(L, N, dtype=torch.bool).tril(diagonal=N - L)
        if wrong and K.shape[1] != q.shape[1]:
            reps = q.shape[1] // K.shape[1]
            K, V = K.repeat(1, reps, 1, 1), V.repeat(1, reps, 1, 1)
        return F.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]),
                                              enable_gqa=True)

    assert check_against_reference(adapt(sdpa, array="torch", dtype=dtype, layout="bhld", gqa=True)).passed
    wrong = adapt(lambda q, K, V, tau=1.0, causal=False, mask=None: sdpa(q, K, V, tau, causal, mask, True),
                  array="torch", dtype=dtype, layout="bhld", gqa=True)
    assert "grouped-query" in {r.case.name for r in check_against_reference(wrong).results if not r.passed}

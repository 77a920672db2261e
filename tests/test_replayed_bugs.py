"""Real bugs reported on public trackers of attention kernels, each rebuilt as a small NumPy kernel from what its
report says (no code copied): the gradient check (:func:`varsim.testing.check_gradients`, default battery) fails the
buggy version and passes the fixed one, and names the case that shows the bug.

Each replay cites the tracker, the issue or pull-request number and its title as they stand on GitHub (read through
the search tool on 2026-12-07). A replay is the bug's mechanism in the kit's protocol, not the project's code: the
original kernels are CUDA, Triton, Metal or XLA.
"""

import math

import numpy as np

from varsim.testing import check_gradients
from varsim.testing.grad_reference import expand_heads, sum_groups, top_left_mask, window_mask


def _mask(L, N, mask, causal, window, *, align="bottom_right", window_keys=None, window_needs_mask=False):
    """The mask a kernel applies: causal (aligned as told), a causal window of ``window_keys`` keys, a given mask."""
    m = None if mask is None else np.asarray(mask, dtype=bool)
    if causal:
        if window and not (window_needs_mask and mask is None):
            c = window_mask(L, N, window if window_keys is None else window_keys)
        else:
            c = top_left_mask(L, N) if align == "top_left" else window_mask(L, N, N)
        m = c if m is None else m & c
    return m


def _attend(q, K, V, dO, *, scale, m, softcap=None, sink=None, bias=None, keep=None, p=0.0, bug=""):
    """A small NumPy attention, forward and backward, with one of the replayed bugs switched on by ``bug``."""
    H, G = q.shape[1], K.shape[1]
    tile = bug == "kv_heads_tiled"
    Kh, Vh = (np.tile(x, (1, H // G, 1, 1)) for x in (K, V)) if tile else (expand_heads(x, H) for x in (K, V))
    s = scale * q @ np.swapaxes(Kh, -1, -2) + (0.0 if bias is None else bias)
    mm = np.ones(s.shape, dtype=bool) if m is None else np.broadcast_to(m, s.shape)
    if softcap and bug == "softcap_after_mask":  # -inf becomes -cap: masked keys leak into the softmax
        th = np.tanh(np.where(mm, s, -np.inf) / softcap)
        c, mm = softcap * th, np.ones(s.shape, dtype=bool)
    else:
        th = np.tanh(s / softcap) if softcap else None
        c = softcap * th if softcap else s
    cm = np.where(mm, c, -np.inf)
    cols = [cm] + ([np.broadcast_to(sink[None, :, None, None], (*cm.shape[:-1], 1))] if sink is not None else [])
    z = np.concatenate(cols, axis=-1)
    mx = z.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        if bug in ("nan_rows", "nan_rows_in_backward"):  # a plain softmax: a row of -inf is 0 / 0
            Pz = np.exp(z - mx) / np.exp(z - mx).sum(axis=-1, keepdims=True)
        else:  # the fix: such a row gets zero weights
            e = np.exp(z - np.where(np.isfinite(mx), mx, 0.0))
            Pz = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    P, Psink = Pz[..., :cm.shape[-1]], Pz[..., cm.shape[-1]:]
    drop = 1.0 if keep is None else keep / (1.0 - p)
    O = np.nan_to_num(P * drop) @ Vh if bug == "nan_rows_in_backward" else (P * drop) @ Vh  # forward zeroes NaN
    dPd = dO @ np.swapaxes(Vh, -1, -2)
    if bug == "dp_over_dk_channels":  # dP = dO V^T over the first d_k value channels only
        d = q.shape[-1]
        dPd = dO[..., :d] @ np.swapaxes(Vh[..., :d], -1, -2)
    D = (dO * O).sum(axis=-1, keepdims=True)
    if bug == "dropout_post_softmax_in_backward":  # dS from the dropped weights and an undropped dP
        dC = (P * drop) * (dPd - D)
    else:
        dC = P * (dPd * drop - D)
    dS = dC * (1.0 - th**2) if th is not None else dC
    dq = scale * dS @ Kh
    dk_h, dv_h = scale * np.swapaxes(dS, -1, -2) @ q, np.swapaxes(P * drop, -1, -2) @ dO
    if bug == "group_not_reduced":
        dk, dv = dk_h, dv_h
    elif tile:
        dk, dv = (x.reshape(x.shape[0], H // G, G, *x.shape[2:]).sum(axis=1) for x in (dk_h, dv_h))
    else:
        dk, dv = sum_groups(dk_h, G), sum_groups(dv_h, G)
    out = dict(o=O, dq=dq, dk=dk, dv=dv)
    if sink is not None:
        out["dsink"] = -(Psink[..., 0] * D[..., 0]).sum(axis=(0, 2))
    if bias is not None:
        out["dbias"] = np.zeros(bias.shape) if bug == "no_bias_gradient" else dS.sum(axis=0)
    return out


def kernel(bug="", *, align="bottom_right", window_keys=None, window_needs_mask=False, mask_ignored=False,
           scale_dim="head"):
    """A kernel of the gradient check's protocol with the bug switched on (``bug=""``: the fixed kernel)."""

    def fn(q, K, V, dO, tau=1.0, mask=None, causal=False, window=0, softcap=None, sink=None, bias=None, dropout_p=0.0,
           seed=0):
        L, N = q.shape[2], K.shape[2]
        wk = None if window_keys is None else window_keys(window)
        m = _mask(L, N, None if mask_ignored else mask, causal, window, align=align, window_keys=wk,
                  window_needs_mask=window_needs_mask)
        d = q.shape[-1] * (q.shape[1] if scale_dim == "model" else 1)
        keep = np.random.default_rng(seed).random((q.shape[0], q.shape[1], L, N)) >= dropout_p if dropout_p else None
        out = _attend(q, K, V, dO, scale=tau / math.sqrt(d), m=m, softcap=softcap, sink=sink, bias=bias, keep=keep,
                      p=dropout_p, bug=bug)
        return dict(out, dropout_mask=keep) if keep is not None else out

    return fn


def _replay(buggy, fixed, shows_in, **options):
    """The check fails ``buggy`` in the named case(s) and passes ``fixed`` (every case run, but the NaN-planting one
    when the convention is not stated)."""
    fixed_report = check_gradients(fixed, dtype="float32", **options)
    ran_all = all(not r.skipped or (r.case.masked_nan and options.get("masked_inputs", "finite") == "finite")
                  for r in fixed_report.results)
    assert fixed_report.passed and ran_all, fixed_report.describe()
    report = check_gradients(buggy, dtype="float32", **options)
    failed = {r.case.name for r in report.results if r.verdict == "fail"}
    assert report.verdict == "fail", report.describe()
    assert set(shows_in) <= failed, (failed, report.describe())
    return report


def test_pytorch_103963_sdpa_nan_for_fully_masked_rows():
    """pytorch/pytorch#103963, "`scaled_dot_product_attention` produces `nan`s with boolean `attn_mask` with zero
    rows." (same class: pytorch/pytorch#109517, "SDPA Memory Efficient Attention is producing NaNs for certain mask
    patterns."; ml-explore/mlx#2608, "Avoid producing NaN in attention"). A query row that attends no key is 0 / 0
    in a plain softmax; the fix returns zeros there."""
    report = _replay(kernel("nan_rows"), kernel(), ["masked_row"])
    assert "non-finite" in report.worst.detail


def test_brevitas_1591_nan_gradients_although_the_output_is_zeroed():
    """Xilinx/brevitas#1591, "Fix (nn): fix edge case in QSDA where fwd/bwd could become NaN": zeroing the NaN
    weights of a fully masked row after the softmax fixes the output but not the gradients, since the softmax's
    backward still multiplies by the NaN weights. Replayed: the output is clean, dq/dK/dV carry the NaN."""
    report = _replay(kernel("nan_rows_in_backward"), kernel(), ["masked_row"])
    assert report.worst.detail.startswith(("dq", "dk", "dv")) and "non-finite" in report.worst.detail


def test_flash_attention_402_causal_mask_top_left_when_queries_are_fewer_than_keys():
    """Dao-AILab/flash-attention#402, "[Feature request] Support for causal mask flash attention when seq_len_q !=
    seq_len_k" (and #351, "Causal masking with past"): before 2.1 the causal mask was aligned top-left, so with a KV
    cache the queries could not see the cached keys. Checked under the bottom-right convention those users wanted."""
    _replay(kernel(align="top_left"), kernel(), ["decode_causal"])


def test_mlx_2835_causal_convention_differs_from_pytorch():
    """ml-explore/mlx#2835, "[BUG] Result of scaled_dot_product_attention does not match PyTorch when S_Q != S_KV,
    mask="causal"" (same mismatch: pytorch/executorch#22426, "MLX backend returns wrong numbers for causal
    attention when query and key lengths differ"): MLX aligns the causal mask bottom-right, PyTorch's is_causal
    top-left. A bottom-right kernel checked by a user who states PyTorch's convention fails; stating MLX's, it
    passes (and a top-left kernel passes under PyTorch's)."""
    _replay(kernel(), kernel(align="top_left"), ["decode_causal"], causal="top_left")


def test_transformers_39408_sliding_window_one_key_too_many():
    """huggingface/transformers#39408, "Off-by-one error when using flash_attention with a sliding window": passing
    the window as flash-attn's (window, window) lets a causal query see one key more than the window (same class:
    ml-explore/mlx-lm#390, "fix window attention mask")."""
    _replay(kernel(window_keys=lambda w: w + 1), kernel(), ["window"])


def test_jax_32300_window_ignored_without_a_mask():
    """jax-ml/jax#32300, "jax.nn.dot_product_attention ignores local_window_size when mask is not present"."""
    _replay(kernel(window_needs_mask=True), kernel(), ["window"])


def test_jax_23349_padding_lengths_ignored():
    """jax-ml/jax#23349, "`jax.nn.dot_product_attention` does not respect `key_value_seq_lengths`": padded keys
    leak into the softmax. Replayed as a kernel that drops the padding mask it is given."""
    _replay(kernel(mask_ignored=True), kernel(), ["padding", "masked_row"])


def test_onnx_7274_grouped_heads_tiled_instead_of_interleaved():
    """onnx/onnx#7274, "Update attention gqa to use repeat interleave within repeat kv": KV heads expanded with
    Tile ([kv0, kv1, kv0, kv1]) where PyTorch repeats each head ([kv0, kv0, kv1, kv1])."""
    _replay(kernel("kv_heads_tiled"), kernel(), ["grouped"])


def test_levanter_449_grouped_key_gradients_not_reduced_over_the_group():
    """marin-community/levanter#449, "Bugfix: GQA with FA": K and V are broadcast over a group's query heads in the
    forward, and the backward must sum dK and dV over that axis; without the sum they keep one gradient per query
    head. The check names the shape."""
    report = _replay(kernel("group_not_reduced"), kernel(), ["grouped", "multi_query_causal", "window"])
    assert "dk has shape (1, 4, 9, 8), expected (1, 2, 9, 8)" in report.describe()


def test_nki_samples_81_dropout_in_the_backward():
    """aws-neuron/nki-samples#81, "Fix attention backward dropout": the backward used the post-dropout softmax output
    in its softmax gradient and did not apply dropout to the incoming gradient."""
    report = _replay(kernel("dropout_post_softmax_in_backward"), kernel(), ["dropout"])
    assert report.worst.case.name == "dropout"


def test_flash_attention_1025_softcap_applied_after_the_mask_leaks():
    """Dao-AILab/flash-attention#1025, "[WIP] First draft for softcapping.": the maintainer's review says softcapping
    must come before masking, else masked keys get the logit -cap and contribute to the softmax. (The battery's
    softcap case is causal for this reason: without masked keys the bug passed.)"""
    _replay(kernel("softcap_after_mask"), kernel(), ["softcap"])


def test_native_sparse_attention_27_dq_with_value_extents_of_the_key_dim():
    """XunhaoLai/native-sparse-attention-triton#27, "flash_attention_varlen backward: wrong head-count division under
    gqa_interleave and wrong v-space extents in backward_dq" (its second defect): with the value head dim larger
    than the key head dim, dP = dO V^T in the dq kernel runs over the first d_k value channels only."""
    _replay(kernel("dp_over_dk_channels"), kernel(), ["grouped", "decode_causal"])


def test_vit_pytorch_65_scale_from_the_model_width():
    """lucidrains/vit-pytorch#65, "doubt about scale in Attantion": the logits were scaled by dim ** -0.5 (the model
    width) instead of dim_head ** -0.5; the maintainer confirmed and fixed it. Replayed with the width H * d_k."""
    _replay(kernel(scale_dim="model"), kernel(), ["plain", "grouped"])


def _ignoring_masked_inputs(fn):
    """``fn`` with the keys and values that no query may attend zeroed first (as a kernel that loads them under the
    mask, with zero fill, does): the fix of pytorch/pytorch#101967."""

    def fixed(q, K, V, dO, mask=None, **keywords):
        if mask is not None:
            live = np.asarray(mask).any(axis=2)[..., None]  # (B, 1, N, 1): some query attends the key
            K, V = np.where(live, K, 0.0), np.where(live, V, 0.0)
        return fn(q, K, V, dO, mask=mask, **keywords)

    return fixed


def test_pytorch_101967_nan_in_masked_out_inputs():
    """pytorch/pytorch#101967, "scaled_dot_product_attention produces NaN when input has NaN in masked-out
    positions": the output should not depend on masked-out values, NaN included. A kernel computing P V (and
    dS K) with masked-out keys and values holding NaN returns NaN, though their weights are zero; under the stated
    convention (``masked_inputs="any"``) the ``padding_nan`` case catches it. Without the convention the case is
    skipped, and said so."""
    plain = kernel()

    def nan_propagating(q, K, V, dO, tau=1.0, mask=None):
        with np.errstate(invalid="ignore"):  # 0 * NaN
            return plain(q, K, V, dO, tau=tau, mask=mask)

    report = _replay(nan_propagating, _ignoring_masked_inputs(plain), ["padding_nan"], masked_inputs="any")
    assert "non-finite" in report.worst.detail
    default = check_gradients(nan_propagating, dtype="float32")
    assert default.passed and "skipped padding_nan: NaN and inf in masked-out keys" in default.describe()


def test_jax_27184_no_gradient_for_the_bias():
    """jax-ml/jax#27184, "the gradient of bias in jax.nn.dot_product_attention": with implementation='cudnn' the
    bias gets no gradient. Replayed as a backward returning a zero bias gradient."""
    report = _replay(kernel("no_bias_gradient"), kernel(), ["bias"])
    assert report.worst.detail.startswith("dbias")


def test_flash_attention_2665_strided_inputs():
    """Dao-AILab/flash-attention#2667, "fix(hd256/sm100): make the dedicated hd256 kernel stride-aware (supersede
    #2666 copy)" (fixing #2665): a kernel that assumed contiguous (B, S, H, D) strides read the wrong addresses for
    a transpose(1, 2) input. Replayed as a kernel reading its input's raw buffer as if it were contiguous; the battery's
    ``plain`` and ``grouped`` cases hand over the transposed, sliced views of a fused projection."""
    plain = kernel()

    def raw_buffer(q, K, V, dO, tau=1.0, mask=None, causal=False, window=0):
        q2, K2, V2 = (np.asarray(x).ravel(order="K").reshape(x.shape) for x in (q, K, V))  # memory order
        return plain(q2, K2, V2, dO, tau=tau, mask=mask, causal=causal, window=window)

    _replay(raw_buffer, kernel(), ["plain", "grouped"])

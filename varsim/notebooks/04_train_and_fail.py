# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Train a tiny transformer, watch it fail at long N
#
# Task (**argmax retrieval**): a set of $N$ items, each with a priority in $[0, 1)$ and a class label out of 10;
# answer the label of the item with the largest priority. We train a one-block transformer (hand-written backprop,
# NumPy) on sets of size 1..16 and test it on sets up to $N = 4096$. Accuracy falls, and the reason is visible in the
# attention weights: the weight on the correct item decays towards $1/N$. Runs in well under a minute.

# %%
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from varsim.tasks import make_batch
from varsim.train import TrainConfig, evaluate, load_checkpoint, read_metrics, train

# %% [markdown]
# ## Train
# A small model (width 32, one head) with a high learning rate learns the task in a few hundred steps.

# %%
run_dir = tempfile.mkdtemp(prefix="varsim-argmax-")
cfg = TrainConfig(task="argmax", model={"d_model": 32, "n_heads": 1}, lr=1e-2, steps=800, batch_size=64,
                  log_every=50, checkpoint_every=10_000, seed=0)
summary = train(cfg, run_dir)
print(summary["status"], "final loss", round(summary["final_loss"], 4), "train accuracy", summary["train_accuracy"])
metrics = [r for r in read_metrics(f"{run_dir}/metrics.jsonl") if "loss" in r]
plt.figure(figsize=(5, 3))
plt.semilogy([r["step"] for r in metrics], [r["loss"] for r in metrics])
plt.xlabel("step")
plt.ylabel("training loss")
plt.show()
assert summary["status"] == "completed"

# %% [markdown]
# ## Test at longer sets
# `evaluate` draws fresh sets at each length (with Wilson 95% intervals).

# %%
lengths = [4, 16, 64, 256, 1024, 4096]
ev = evaluate(run_dir, lengths=lengths, n_examples=256, batch_size=128, seed=1)
for n, a, lo, hi in zip(lengths, ev["accuracy"], ev["ci_low"], ev["ci_high"]):
    print(f"N = {n:5d}: accuracy {a:.3f} [{lo:.3f}, {hi:.3f}]")
assert ev["accuracy"][1] >= 0.9               # it learned the task at the training lengths
assert ev["accuracy"][-1] < ev["accuracy"][1] - 0.3  # ... and fails far beyond them

# %% [markdown]
# ## Where the attention goes
# `model.analysis(batch)` returns what the query token sees in each block, including its attention weights over the
# items (`block0.attn_weights`, shape `(B, heads, N)`). We read the weight on the item with the largest priority.

# %%
model, _, _ = load_checkpoint(run_dir)
rng = np.random.default_rng(2)
weight_on_correct = []
for n in lengths:
    batch = make_batch("argmax", 128, n, rng)
    w = model.analysis(batch)["block0.attn_weights"]  # (B, H, N)
    best = np.argmax(batch["priority"], axis=1)         # the item that decides the answer
    weight_on_correct.append(float(w[np.arange(len(best)), :, best].max(axis=1).mean()))

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
axes[0].errorbar(lengths, ev["accuracy"], yerr=[np.subtract(ev["accuracy"], ev["ci_low"]),
                                                  np.subtract(ev["ci_high"], ev["accuracy"])], fmt="o-")
axes[0].axvspan(1, 16, color="C2", alpha=0.15, label="training lengths")
axes[0].axhline(0.1, color="k", lw=0.5, ls="--", label="chance")
axes[0].set(xscale="log", xlabel="N", ylabel="accuracy", title="accuracy")
axes[0].legend()
axes[1].loglog(lengths, weight_on_correct, "o-", label="weight on the correct item")
axes[1].loglog(lengths, 1.0 / np.array(lengths), "k--", label="1/N (uniform)")
axes[1].set(xlabel="N", title="attention on the correct item")
axes[1].legend()
plt.show()
for n, wc in zip(lengths, weight_on_correct):
    print(f"N = {n:5d}: weight on the correct item {wc:.4f} (1/N = {1 / n:.4f})")
assert weight_on_correct[-1] < weight_on_correct[1] / 4  # the selection disperses as N grows

# %% [markdown]
# The softmax spreads its weight over more and more items: with priorities that have no gap, a fixed learned
# temperature cannot keep the top item's weight near 1 as $N$ grows, so the output drifts towards an average of
# the labels, and its variance vanishes (notebook 1). Normalising the output afterwards rescales it but cannot
# restore which item was selected.

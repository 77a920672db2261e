import matplotlib.pyplot as plt
from varsim import plotting
from varsim.sim import simulate

ns = [16, 64, 256, 1024, 4096]
variants = {"softmax": {}, "ssmax": {"s": 0.5}, "logn": {}, "topk": {"k": 8}, "entmax15": {}}
with plotting.style("column"):
    fig, ax = plt.subplots(figsize=(3.3, 2.4), layout="constrained")
    for (name, params), ls in zip(variants.items(), ["-", "--", "-.", ":", "-"]):
        r = simulate(ns, query_norm=2 * 8, attention=name, sampler="logits", estimator="rao_blackwell",
                     n_sequences=1000, seed=0, **params)  # beta = |q| / sqrt(d_k) = 16 / 8
        ax.errorbar(r.n, r.ipr, r.ipr_se, ls=ls, marker="o", label=name)
    ax.set(xscale="log", yscale="log", xlabel="$N$", ylabel=r"$E[\sum w^2]$ ($\pm$ SE)")
    ax.legend()
    fig.savefig("variants.pdf")

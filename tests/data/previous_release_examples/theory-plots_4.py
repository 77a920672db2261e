import matplotlib.pyplot as plt
from varsim import plotting
from varsim.sim import simulate

with plotting.style("column"):
    fig, ax = plt.subplots(figsize=(3.3, 2.6), layout="constrained")
    for beta in (0.5, 1, 2, 3):
        r = simulate([16, 64, 256, 1024], d_k=128, d_v=64, query_norm=beta * 128**0.5, key_dist="uniform",
                     coupling=0.5, sampler="full", n_sequences=400, seed=0)
        plotting.plot_result(r, ax=ax)
    fig.savefig("coupled_uniform.pdf")

from varsim.figures import fig_variance_vs_n as fig_a

data = fig_a.compute(betas=(0.5, 1, 2, 3), d_k=128, n_max=2**20, sequences=200,
                     full_sampler=False, out="variance_vs_n.json")
fig = fig_a.draw(data, style="column")
fig.savefig("variance_vs_n.pdf")

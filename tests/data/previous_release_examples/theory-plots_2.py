import numpy as np
from varsim import plotting

ax = plotting.phase_diagram(ln_n=np.linspace(0, 14, 141), betas=np.linspace(0.1, 4, 79), style="column")
ax.figure.savefig("phase_diagram.pdf")

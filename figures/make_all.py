"""Regenerate every figure: ``python figures/make_all.py [--quick] [--outdir DIR] [--only NAME ...]``.

A thin script: the figure code is the installed package ``varsim.figures`` (the same as ``varsim figures``).
"""

from varsim.figures import main

if __name__ == "__main__":
    raise SystemExit(main())

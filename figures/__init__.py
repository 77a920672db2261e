"""The varsim figures: one module per figure (``fig_*.py``), each with ``compute`` and ``plot``.

``figures.make_all`` holds the registry and regenerates them; ``varsim figures`` calls it from a checkout.
This directory is part of the repository, not of the installed ``varsim`` package.
"""

"""``python -m varsim.figures [options]``: the same as ``varsim figures``."""

from varsim.figures import main

raise SystemExit(main())

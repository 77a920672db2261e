"""Helpers shared by every part of varsim (validation, seeding, atomic I/O, progress).

``varsim.sim`` and ``varsim.nn`` never import each other; both may import this.
"""

import varsim.testing  # registers the profiles
from hypothesis import settings

settings.load_profile("varsim-mc-derandomized")

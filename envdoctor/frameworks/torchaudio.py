"""torchaudio: shown on PyTorch's line; never installed alone."""

from . import Framework

FRAMEWORK = Framework("torchaudio", "torchaudio", False, companion_of="torch", counts=False, distributions="torchaudio",
                      order=110)

"""torchvision: shown on PyTorch's line; never installed alone."""

from . import Framework

FRAMEWORK = Framework("torchvision", "torchvision", False, companion_of="torch", counts=False,
                      distributions="torchvision", order=100)

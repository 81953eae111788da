"""PaddlePaddle: ``paddlepaddle`` (CPU) and ``paddlepaddle-gpu``, builds in ``paddle.json``."""

from . import Framework

FRAMEWORK = Framework("paddle", "PaddlePaddle", True, "paddle", advise=True, distributions="paddlepaddle(-gpu)?",
                      cpu_distributions="paddlepaddle", order=60, uses_cudnn=True, dlopen_order=4, arch_lists=True,
                      policy_order=50)

"""PaddlePaddle: ``paddlepaddle`` (CPU) and ``paddlepaddle-gpu``, builds in ``paddle.json``."""

from . import Framework

FRAMEWORK = Framework("paddle", "PaddlePaddle", True, "paddle", advise=True, distributions="paddlepaddle(-gpu)?",
                      cpu_distributions="paddlepaddle", order=60, uses_cudnn=True, dlopen_order=4, arch_lists=True,
                      policy_order=50,
                      dlopens=(),  # cuDNN only, by its unversioned name (probes.dlopen.wanted)
                      # libpaddle.so under paddle/base (3.x) or paddle/fluid (2.5, 2.6), core_avx.so / core_noavx.so
                      # before; the shared PHI kernel libraries (libphi*.so) of the builds that split them out
                      kernel_libraries=(("paddle/base", ("libpaddle.so",)),
                                        ("paddle/fluid", ("libpaddle.so", "core_avx.so", "core_noavx.so")),
                                        ("paddle/libs", ("libphi*",))))

"""PaddlePaddle: ``paddlepaddle`` (CPU) and ``paddlepaddle-gpu``, builds in ``paddle.json``."""

from . import Framework

FRAMEWORK = Framework("paddle", "PaddlePaddle", True, "paddle", advise=True, distributions="paddlepaddle(-gpu)?",
                      cpu_distributions="paddlepaddle", order=60, uses_cudnn=True, dlopen_order=4, arch_lists=True,
                      policy_order=50, links=True,
                      # its main library links the CUDA runtime it was built with by soname (NEEDED
                      # libcudart.so.<major>[.<minor>]: cmake's cuda_add_library links CUDA_LIBRARIES, the shared
                      # cudart; "libcudart.so.10.2: cannot open shared object file" on importing a CUDA 10.2 wheel,
                      # PaddlePaddle/PaddleOCR#10078) and opens cuDNN, cuBLAS and the rest itself (WITH_DSO)
                      cuda_libraries=("paddle/base/libpaddle.so", "paddle/fluid/libpaddle.so",
                                      "paddle/fluid/core_avx.so", "paddle/fluid/core_noavx.so"),
                      dlopens=(),  # cuDNN only, by its unversioned name (probes.dlopen.wanted)
                      # libpaddle.so under paddle/base (3.x) or paddle/fluid (2.5, 2.6), core_avx.so / core_noavx.so
                      # before; the shared PHI kernel libraries (libphi*.so) of the builds that split them out
                      kernel_libraries=(("paddle/base", ("libpaddle.so",)),
                                        ("paddle/fluid", ("libpaddle.so", "core_avx.so", "core_noavx.so")),
                                        ("paddle/libs", ("libphi*",))))

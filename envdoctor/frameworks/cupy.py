"""CuPy: one wheel per CUDA major (``cupy-cuda12x``), builds in ``cupy.json``; it compiles kernels at run time
with NVRTC."""

from . import Framework

FRAMEWORK = Framework("cupy", "CuPy", True, "cupy", advise=True, distributions=r"cupy(-cuda(\d+x|\d+))?", order=50,
                      uses_cudnn=True, dlopen_order=3, arch_lists=True, runtime_compiled=True, policy_order=60,
                      dlopens=("nvrtc", "cublas", "cufft", "curand", "cusolver", "cusparse"),
                      kernel_libraries=(("cupy/cuda", ("thrust*", "cub*")), ("cupy/random", ("_generator_api*",))))

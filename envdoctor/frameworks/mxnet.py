"""MXNet (retired to the Apache Attic in 2023): ``mxnet`` and its ``mxnet-cuNNN`` builds, in ``mxnet.json``."""

from . import Framework

FRAMEWORK = Framework("mxnet", "MXNet", True, "mxnet", distributions=r"mxnet(-cu\d+)?(mkl)?",
                      cpu_distributions="mxnet(mkl)?",
                      order=70, links=True, glibc=True, policy_order=70,
                      # the mxnet-cuNNN wheels link the CUDA libraries of their CUDA release (NEEDED, no RPATH) and
                      # expect them installed on the machine (apache/mxnet#20279)
                      cuda_libraries=("mxnet/libmxnet.so",), abi_libraries=(("mxnet/libmxnet.so",),))

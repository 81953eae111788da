"""MXNet (retired to the Apache Attic in 2023): ``mxnet`` and its ``mxnet-cuNNN`` builds, in ``mxnet.json``."""

from . import Framework

FRAMEWORK = Framework("mxnet", "MXNet", True, "mxnet", distributions=r"mxnet(-cu\d+)?(mkl)?",
                      cpu_distributions="mxnet(mkl)?",
                      order=70, links=True, glibc=True, policy_order=70)

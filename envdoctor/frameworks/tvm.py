"""Apache TVM: ``apache-tvm`` (the PyPI wheel, a CPU-only build whatever extra is installed), builds in ``tvm.json``.
Whether an installed TVM is a CUDA build is read from its runtime library: a build with ``USE_CUDA=ON`` links the
CUDA runtime and driver into ``libtvm_runtime.so`` (cmake/modules/CUDA.cmake: ``TVM_RUNTIME_LINKER_LIBS``)."""

from . import Framework

FRAMEWORK = Framework("tvm", "Apache TVM", True, "tvm", distributions="apache-tvm", order=75)

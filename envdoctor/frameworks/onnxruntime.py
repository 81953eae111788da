"""ONNX Runtime: CPU and GPU wheels, builds in ``onnxruntime.json``."""

from . import Framework

FRAMEWORK = Framework("onnxruntime", "ONNX Runtime", True, "onnxruntime", advise=True,
                      distributions=r"onnxruntime(-gpu|-training|-directml|-openvino|-rocm)?|ort-nightly(-gpu)?",
                      cpu_distributions=r"onnxruntime|ort-nightly", cpu_dependency_by_choice=True, order=40,
                      aliases=("ort",), links=True,
                      cudnn_build=True, uses_cudnn=True, dlopen_order=2, glibc=True, fleet=True, policy_order=40,
                      cuda_libraries=("onnxruntime/capi/libonnxruntime_providers_cuda.so",),
                      abi_libraries=(("onnxruntime/capi/onnxruntime_pybind11_state.so",),
                                     ("onnxruntime/capi/libonnxruntime_providers_cuda.so",)),
                      dlopens=("cudart", "cublas", "cublasLt", "cufft", "curand"))

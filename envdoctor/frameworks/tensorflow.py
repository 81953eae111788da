"""TensorFlow: builds in ``tensorflow.json`` (tested CUDA and cuDNN), installed by the ``tensorflow`` recipe;
Keras is shown on its line."""

from . import Framework

#: libtensorflow_framework, its CUDA library (the first that exists)
#: (before 1.14, the Python extension: it links cuDNN and the CUDA libraries itself, and libtensorflow_framework.so)
_FRAMEWORK_LIB = ("tensorflow/libtensorflow_framework.so.2", "tensorflow_core/libtensorflow_framework.so.2",
                  "tensorflow_core/libtensorflow_framework.so.1", "tensorflow/libtensorflow_framework.so.1",
                  "tensorflow/python/_pywrap_tensorflow_internal.so")

FRAMEWORK = Framework("tensorflow", "TensorFlow", True, "tensorflow", advise=True, recipe="tensorflow",
                      distributions=r"tensorflow(-cpu|-gpu|-intel|-rocm|-aarch64)?|tf-nightly(-gpu|-cpu)?|"
                                    r"intel-tensorflow|nvidia-tensorflow",
                      cpu_distributions=r"tensorflow-cpu|tf-nightly-cpu|intel-tensorflow", order=20, aliases=("tf",),
                      links=True, cudnn_build=True, uses_cudnn=True, dlopen_order=1, arch_lists=True, glibc=True,
                      nvidia_wheels_field="and_cuda_wheels", engine_stack=True, fleet=True, policy_order=20,
                      dependents_of=("tensorflow",),
                      # libtensorflow_framework.so.N and _pywrap_tensorflow_internal.so (tensorflow_core/ in 1.15-2.1)
                      extension_libs=r"^(?:libtensorflow_(?:framework|cc)\.so\.\d+|_pywrap_tensorflow_internal\.so)$",
                      extension_dirs=("tensorflow", "tensorflow/python", "tensorflow_core", "tensorflow_core/python"),
                      # tensorflow::, tsl::
                      extension_symbols=r"^_Z(?:TV|TI|TS|GV|TH|TW)?N(?:[KVr]|St)*(?:10tensorflow|3tsl)",
                      # TF 1.15-2.1 and NVIDIA's nvidia-tensorflow keep the real package in tensorflow_core/; TF 1.x
                      # is .so.1
                      cuda_libraries=_FRAMEWORK_LIB,
                      abi_libraries=(_FRAMEWORK_LIB, ("tensorflow/python/_pywrap_tensorflow_internal.so",
                                                      "tensorflow_core/python/_pywrap_tensorflow_internal.so")),
                      dlopens=("cudart", "cublas", "cublasLt", "cufft", "curand", "cusolver", "cusparse"),
                      kernel_libraries=(("tensorflow", ("libtensorflow_cc.so.2",)),
                                        ("tensorflow/python", ("_pywrap_tensorflow_internal.so",)),
                                        ("tensorflow_core/python", ("_pywrap_tensorflow_internal.so",))))

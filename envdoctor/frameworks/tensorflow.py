"""TensorFlow: builds in ``tensorflow.json`` (tested CUDA and cuDNN), installed by the ``tensorflow`` recipe;
Keras is shown on its line."""

from . import Framework

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
                      extension_symbols=r"^_Z(?:TV|TI|TS|GV|TH|TW)?N(?:[KVr]|St)*(?:10tensorflow|3tsl)")

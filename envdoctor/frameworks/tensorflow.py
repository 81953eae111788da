"""TensorFlow: builds in ``tensorflow.json`` (tested CUDA and cuDNN), installed by the ``tensorflow`` recipe;
Keras is shown on its line."""

from . import Framework, Install

#: what an install runs to see it import, and on a GPU machine, fail when it sees no GPU
_SMOKE = "import tensorflow as tf; print(tf.__version__, tf.config.list_physical_devices('GPU'))"
#: TensorFlow 2.16's wheels (also with [and-cuda]) are known to see no GPU:
#: https://github.com/tensorflow/tensorflow/issues/63362 ("TF 2.17.0 RC0 Fails to work with GPUs (and TF 2.16 too)")
_KNOWN_NO_GPU = {"2.16": "a known problem of TensorFlow 2.16's wheels, with [and-cuda] too "
                        "(https://github.com/tensorflow/tensorflow/issues/63362): install 2.17 or newer "
                        "(envdoctor install tensorflow --version 2.17)"}
_SMOKE_GPU = (_SMOKE + "\nimport sys\nknown = " + repr(_KNOWN_NO_GPU) + "\n"
              "if not tf.config.list_physical_devices('GPU'): sys.exit('TensorFlow ' + tf.__version__ + ' sees no GPU "
              "on this GPU machine' + (': ' + known[tf.__version__[:4]] if tf.__version__[:4] in known else "
              "': check the driver with nvidia-smi'))")

#: libtensorflow_framework, its CUDA library (the first that exists). 1.4-1.13 name it without a version
#: (tensorflow/libtensorflow_framework.so), and it is the one that links cuDNN, cuFFT and cuRAND: the
#: tensorflow_gpu-1.5.0 wheel's libtensorflow_framework.so has NEEDED libcublas.so.9.0, libcudnn.so.7,
#: libcufft.so.9.0, libcurand.so.9.0 and libcudart.so.9.0, its python/_pywrap_tensorflow_internal.so only
#: libcublas.so.9.0, libcusolver.so.9.0 and libcudart.so.9.0 (readelf -d on the PyPI wheel). Before 1.4 only the
#: Python extension exists, and it links them all. In 0.x (and 1.0) that extension is python/_pywrap_tensorflow.so
#: (the 0.x wheels' tensorflow/tools/pip_package/setup.py ships package_data 'python/_pywrap_tensorflow.so'; later
#: releases renamed its tf_py_wrap_cc target pywrap_tensorflow_internal); it links libcudart.so.<major.minor> and
#: opens the other CUDA libraries at run time (stream_executor/dso_loader.cc).
_FRAMEWORK_LIB = ("tensorflow/libtensorflow_framework.so.2", "tensorflow_core/libtensorflow_framework.so.2",
                  "tensorflow_core/libtensorflow_framework.so.1", "tensorflow/libtensorflow_framework.so.1",
                  "tensorflow/libtensorflow_framework.so", "tensorflow/python/_pywrap_tensorflow_internal.so",
                  "tensorflow/python/_pywrap_tensorflow.so")

FRAMEWORK = Framework("tensorflow", "TensorFlow", True, "tensorflow", advise=True, recipe="tensorflow",
                      distributions=r"tensorflow(-cpu|-gpu|-intel|-rocm|-aarch64)?|tf-nightly(-gpu|-cpu)?|"
                                    r"intel-tensorflow|nvidia-tensorflow",
                      cpu_distributions=r"tensorflow-cpu|tf-nightly-cpu|intel-tensorflow", order=20, aliases=("tf",),
                      links=True, cudnn_build=True, uses_cudnn=True, dlopen_order=1, arch_lists=True, glibc=True,
                      nvidia_wheels_field="and_cuda_wheels", engine_stack=True, fleet=True, policy_order=20,
                      dependents_of=("tensorflow",),
                      # libtensorflow_framework.so.N and _pywrap_tensorflow_internal.so (tensorflow_core/ in 1.15-2.1)
                      extension_libs=r"^(?:libtensorflow_(?:framework|cc)\.so\.\d+|_pywrap_tensorflow(?:_internal)?\.so)$",
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
                                        ("tensorflow_core/python", ("_pywrap_tensorflow_internal.so",))),
                      smoke=_SMOKE, smoke_gpu=_SMOKE_GPU,
                      install=Install(options=("cuda", "variant", "cudnn", "image_os", "env"),
                                      build_fields=(("cudnn", "cudnn"), ("package", "package"))))

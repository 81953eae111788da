"""TensorRT's Python packages: findings about TensorRT name the library layer, not a framework of its own."""

from . import Framework

FRAMEWORK = Framework("tensorrt", "TensorRT (Python)", False, "tensorrt",
                      distributions=r"tensorrt(-cu\d+)?([-_](libs|bindings))?", order=80, links=True,
                      # the Python bindings link libnvinfer.so.<major> and its parsers by soname, without an RPATH (the
                      # tar file's and the wheel's alike: TensorRT's installation guide puts the tar file's lib/ on
                      # LD_LIBRARY_PATH); TensorRT 10's tensorrt_bindings package holds the module under its own name
                      cuda_libraries=("tensorrt/tensorrt.so", "tensorrt_bindings/tensorrt.so"))

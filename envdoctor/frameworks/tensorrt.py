"""TensorRT's Python packages: findings about TensorRT name the library layer, not a framework of its own."""

from . import Framework

FRAMEWORK = Framework("tensorrt", "TensorRT (Python)", False, "tensorrt",
                      distributions=r"tensorrt(-cu\d+)?([-_](libs|bindings))?", order=80, links=True)

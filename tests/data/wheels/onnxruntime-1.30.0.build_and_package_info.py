package_name = 'onnxruntime'
__version__ = '1.30.0'

# Copyright 2019 The TensorFlow Authors. All Rights Reserved.
"""Generates a Python module containing information about the build."""
is_rocm_build = False
is_cuda_build = True
cuda_version_number = '10.1'
cudnn_version_number = '7'

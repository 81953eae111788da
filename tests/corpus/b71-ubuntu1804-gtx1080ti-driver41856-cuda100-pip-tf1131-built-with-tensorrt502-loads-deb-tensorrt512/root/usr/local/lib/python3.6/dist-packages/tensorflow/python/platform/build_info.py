# Copyright 2018 The TensorFlow Authors. All Rights Reserved.
"""Generates a Python module containing information about the build."""
is_cuda_build = True
cuda_version_number = '10.0'
cudnn_version_number = '7'

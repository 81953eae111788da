# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
"""Generates a Python module containing information about the build."""
is_cuda_build = True

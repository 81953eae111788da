# Copyright 2020 The TensorFlow Authors. All Rights Reserved.
"""Auto-generated module providing information about the build."""
import collections

build_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_52', 'sm_60', 'sm_61', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90', 'compute_90']), ('cuda_version', '12.0'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])

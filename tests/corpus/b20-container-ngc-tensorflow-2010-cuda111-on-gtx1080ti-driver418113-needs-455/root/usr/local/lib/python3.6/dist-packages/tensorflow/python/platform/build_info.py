"""Auto-generated module providing information about the build."""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

build_info = {'cuda_version': '11.1', 'cudnn_version': '8', 'cuda_compute_capabilities': ['sm_52', 'sm_60', 'sm_61', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'compute_86'], 'is_rocm_build': False, 'is_cuda_build': True}

# Lint as: python3
is_rocm_build = False
is_cuda_build = True
cuda_version_number = '10.1'
cudnn_version_number = '7'
build_info = {'cuda_version': '10.1', 'cudnn_version': '7', 'is_rocm_build': False, 'is_cuda_build': True}

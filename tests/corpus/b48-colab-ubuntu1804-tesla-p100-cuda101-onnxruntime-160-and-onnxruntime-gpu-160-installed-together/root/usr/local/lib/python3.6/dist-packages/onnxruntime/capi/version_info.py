use_cuda = True
cuda_version = '10.2'
cudnn_version = '8.0'

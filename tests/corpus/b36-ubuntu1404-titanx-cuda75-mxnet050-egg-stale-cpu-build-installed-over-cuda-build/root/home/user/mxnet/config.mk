USE_CUDA = 1
USE_CUDA_PATH = /usr/local/cuda
USE_CUDNN = 0

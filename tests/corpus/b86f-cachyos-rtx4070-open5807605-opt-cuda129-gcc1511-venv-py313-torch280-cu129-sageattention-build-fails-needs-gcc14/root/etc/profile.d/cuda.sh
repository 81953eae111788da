export CUDA_PATH=/opt/cuda
append_path '/opt/cuda/bin'

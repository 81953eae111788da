export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export CUDNN_PATH=/usr/local/cuda/lib64/libcudnn.so.6

. /home/zadran/torch/install/bin/torch-activate

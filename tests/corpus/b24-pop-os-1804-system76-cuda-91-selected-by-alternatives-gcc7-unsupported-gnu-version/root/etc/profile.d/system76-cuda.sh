export PATH="/usr/lib/cuda/bin:$PATH"

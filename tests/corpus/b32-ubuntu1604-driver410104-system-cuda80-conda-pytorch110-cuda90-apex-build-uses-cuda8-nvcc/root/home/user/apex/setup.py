# NVIDIA/apex checkout (build failed)

PATH		+= /usr/lib/nvidia-cuda-toolkit/bin:

LIBRARIES	=+ $(_SPACE_) -L/usr/lib/x86_64-linux-gnu/stubs

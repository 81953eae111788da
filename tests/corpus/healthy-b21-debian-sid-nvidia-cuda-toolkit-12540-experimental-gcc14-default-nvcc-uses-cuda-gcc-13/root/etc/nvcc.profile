
TOP              = $(_HERE_)/..

CICC_PATH        = $(TOP)/nvvm/bin
CICC_NEXT_PATH   = $(TOP)/nvvm-next/bin
NVVMIR_LIBRARY_DIR = /usr/lib/nvidia-cuda-toolkit/libdevice

PATH		+= /usr/lib/nvidia-cuda-toolkit/bin:


LIBRARIES	=+ $(_SPACE_) -L/usr/lib/x86_64-linux-gnu/stubs -L/usr/lib/x86_64-linux-gnu

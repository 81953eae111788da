TOP              = $(_HERE_)/..
PATH            += /usr/lib/nvidia-cuda-toolkit/bin:
INCLUDES        +=  "-I/usr/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L/usr/lib/x86_64-linux-gnu/stubs"

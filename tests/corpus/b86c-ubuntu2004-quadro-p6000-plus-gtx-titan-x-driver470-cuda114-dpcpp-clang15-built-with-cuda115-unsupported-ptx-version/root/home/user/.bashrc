export PATH=/tmp/llvm-build/install/bin:$PATH
export LD_LIBRARY_PATH=/tmp/llvm-build/install/lib:$LD_LIBRARY_PATH

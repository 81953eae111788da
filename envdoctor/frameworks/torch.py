"""PyTorch: builds in ``torch.json`` (CUDA variants, architecture lists, cuDNN), installed by the ``pytorch``
recipe; torchvision and torchaudio are shown on its line."""

from . import Framework, Install

#: what an install runs to see it import, and on a GPU machine, fail when it sees no GPU
_SMOKE = "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
_SMOKE_GPU = (_SMOKE + "\nimport sys\nif not torch.cuda.is_available(): sys.exit('torch ' + torch.__version__ + "
              "' sees no GPU on this GPU machine (torch.cuda.is_available() is False): check the driver with "
              "nvidia-smi, and that this build (CUDA ' + str(torch.version.cuda) + ') runs on it')")

FRAMEWORK = Framework("torch", "PyTorch", True, "torch", advise=True, recipe="pytorch", distributions="torch", order=10,
                      aliases=("pytorch",), links=True, cudnn_build=True, uses_cudnn=True, arch_lists=True, glibc=True,
                      nvidia_wheels_field="nvidia_wheels", engine_stack=True, fleet=True, policy_order=10,
                      dependents_of=("torch",), extension_libs=r"^lib(?:torch|c10|caffe2|shm)[a-z0-9_]*\.so$",
                      extension_dirs=("torch/lib",),
                      # c10::, at::, torch::, caffe2::
                      extension_symbols=r"^_Z(?:TV|TI|TS|GV|TH|TW)?N(?:[KVr]|St)*(?:3c10|2at|5torch|6caffe2)",
                      # PyTorch extension packages that ship compiled CUDA code built against one CUDA runtime
                      extension_packages=(("vllm", "vllm", r".+\.so"), ("flash-attn", ".", r"flash_attn_2_cuda\..*so"),
                                          ("mamba-ssm", ".", r"selective_scan_cuda\..*so"),
                                          ("causal-conv1d", ".", r"causal_conv1d_cuda\..*so"),
                                          ("xformers", "xformers", r".+\.so"),
                                          # (sgl-kernel's wheels, 0.1.2 and 0.1.9 on PyPI: sgl_kernel/common_ops.abi3.so
                                          # and flash_ops.abi3.so link libtorch.so and libc10.so, and the wheels
                                          # declare no Requires-Dist, so no requirement names torch)
                                          ("sgl-kernel", "sgl_kernel", r".+\.so"),
                                          # (mmcv's setup.py builds its ops as one CUDAExtension, ext_name
                                          # 'mmcv._ext', and install_requires, from requirements/runtime.txt,
                                          # names no torch: open-mmlab/mmcv setup.py, 1.x as mmcv-full, 2.x as mmcv)
                                          ("mmcv-full", "mmcv", r"_ext\..*so"), ("mmcv", "mmcv", r"_ext\..*so")),
                      # its CUDA library, whose links are resolved; its compiled libraries' version needs; its kernels
                      cuda_libraries=("torch/lib/libtorch_cuda.so",),
                      # (torch/_C, the extension module every release has, held the whole of torch 0.x, before
                      # libtorch: its conda builds ask GLIBC_2.17 there, pytorch/pytorch#6607; a shell pattern, as
                      # its name carries the interpreter's tag)
                      abi_libraries=(("torch/lib/libtorch_cpu.so",), ("torch/lib/libtorch_python.so",),
                                     ("torch/lib/libtorch_cuda.so",), ("torch/_C.*.so", "torch/_C.so")),
                      # (torch 0.4.0 kept its kernels in ATen, torch 0.1-0.3 in THC and THCUNN: setup.py's ATEN_LIB,
                      # THC_LIB and THCUNN_LIB, torch/lib/lib<name>.so.1, which torch/_C links; a conda build of that
                      # time copied them into the environment's lib, where _C's RPATH points: gpucode.py follows it)
                      kernel_libraries=(("torch/lib", ("libtorch_cuda.so", "libtorch_cuda_cu.so", "libcaffe2_gpu.so")),
                                        ("torch/lib", ("libtorch_cuda_cpp.so",)), ("torch/lib", ("libATen.so.1",)),
                                        ("torch/lib", ("libTHC.so.1",)), ("torch/lib", ("libTHCUNN.so.1",))),
                      smoke=_SMOKE, smoke_gpu=_SMOKE_GPU,
                      # verified 2026-11-22 against https://pytorch.org/get-started/locally/ ("Start Locally", Linux,
                      # Pip, CUDA): pip3 install torch torchvision torchaudio --index-url
                      # https://download.pytorch.org/whl/cu118 (a folder per CUDA variant; ``cpu`` for the CPU wheels);
                      # conda-forge's pytorch-gpu as a channel
                      install=Install(label="torch", options=("cuda", "variant", "cudnn", "image_os", "env", "channel"),
                                      with_driver=True, pip_index="https://download.pytorch.org/whl",
                                      local_variant=True))

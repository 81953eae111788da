"""PyTorch: builds in ``torch.json`` (CUDA variants, architecture lists, cuDNN), installed by the ``pytorch``
recipe; torchvision and torchaudio are shown on its line."""

from . import Framework

FRAMEWORK = Framework("torch", "PyTorch", True, "torch", advise=True, recipe="pytorch", distributions="torch", order=10,
                      aliases=("pytorch",), links=True, cudnn_build=True, uses_cudnn=True, arch_lists=True, glibc=True,
                      nvidia_wheels_field="nvidia_wheels", engine_stack=True, fleet=True, policy_order=10)

"""JAX: jaxlib and its CUDA plugins, builds in ``jax.json``, installed by the ``jax`` recipe; XLA compiles its
kernels at run time with ptxas."""

from . import Framework, Install

#: what an install runs to see it import, and on a GPU machine, fail when it sees no GPU
_SMOKE = "import jax; print(jax.__version__, jax.devices())"
_SMOKE_GPU = (_SMOKE + "\nimport sys\nif not any(d.platform == 'gpu' for d in jax.devices()): sys.exit('jax ' + "
              "jax.__version__ + ' sees no GPU on this GPU machine (jax.devices() lists none): check the driver with "
              "nvidia-smi, and that the CUDA plugin was installed')")

#: its CUDA library: the CUDA plugin's (jax 0.4.26 on), else jaxlib's own
_PLUGIN_LIB = ("jax_plugins/xla_cuda12/xla_cuda_plugin.so", "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
               "jaxlib/cuda/_versions.so")

FRAMEWORK = Framework("jax", "JAX", True, "jax", advise=True, recipe="jax", distributions="jax|jaxlib", order=30,
                      links=True, cudnn_build=True, uses_cudnn=True, dlopen_order=5, arch_lists=True,
                      runtime_compiled=True, glibc=True, nvidia_wheels_field="nvidia_wheels", engine_stack=True,
                      fleet=True, policy_order=30, dependents_of=("jax", "jaxlib"),
                      cuda_libraries=_PLUGIN_LIB,
                      abi_libraries=(("jaxlib/xla_extension.so", "jaxlib/_jax.so"), _PLUGIN_LIB),  # 0.6: _jax
                      # cuDNN only (XLA opens libcudnn.so.<major>); the rest comes with jaxlib or its plugin's RUNPATH
                      # (those jax compares with its build at start-up are resolved for that: probes/dlopen.py)
                      dlopens=(),
                      kernel_libraries=(("jax_plugins/xla_cuda13", ("xla_cuda_plugin.so",)),
                                        ("jax_plugins/xla_cuda12", ("xla_cuda_plugin.so",)),
                                        ("jax_cuda13_plugin", ("_*",)), ("jax_cuda12_plugin", ("_*",)),
                                        ("jaxlib", ("xla_extension.so",)), ("jaxlib/cuda", ("_*",))),
                      smoke=_SMOKE, smoke_gpu=_SMOKE_GPU,
                      # a row of jax.json covers a range of releases with the same CUDA wheels
                      install=Install(label="jax", options=("cuda", "variant", "cudnn", "image_os", "env"),
                                      release_range="jax", suggest=2, companion_version="jaxlib"))

"""JAX: jaxlib and its CUDA plugins, builds in ``jax.json``, installed by the ``jax`` recipe; XLA compiles its
kernels at run time with ptxas."""

from . import Framework

FRAMEWORK = Framework("jax", "JAX", True, "jax", advise=True, recipe="jax", distributions="jax|jaxlib", order=30,
                      links=True, cudnn_build=True, uses_cudnn=True, dlopen_order=5, arch_lists=True,
                      runtime_compiled=True, glibc=True, nvidia_wheels_field="nvidia_wheels", engine_stack=True,
                      fleet=True, policy_order=30, dependents_of=("jax", "jaxlib"))

"""Install recipes: pure functions ``(request, target, facts) -> Plan``.

One module per component and method, e.g. :mod:`recipes.cuda_redist` (CUDA or
cuDNN from NVIDIA's redistributable archives, into a prefix, without root).
A recipe never touches the machine; the executor alone does.
"""

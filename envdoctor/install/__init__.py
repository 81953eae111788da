"""Installing fixes: plans (data), recipes (pure functions making plans), the executor (side effects).

* :mod:`envdoctor.install.plan`: :class:`Plan`, :class:`Step`, actions, checks, shell rendering;
* :mod:`envdoctor.install.validate`: every user option and manifest field is checked here first;
* :mod:`envdoctor.install.download`: resumable, verified downloads (``requests``, imported lazily);
* :mod:`envdoctor.install.executor`: runs a plan, logs it, skips finished steps, stops at the first failure.

The recipes themselves live in the top-level ``recipes/`` folder, installed as :mod:`envdoctor.recipes`.
"""

"""The host seam: the only way envdoctor reads a machine (``base.Host``; ``live`` for this machine,
``snapshot`` for a replayed capture)."""

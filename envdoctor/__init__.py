"""envdoctor: diagnose, validate and install GPU deep-learning stacks.

Kept import-light on purpose: ``envdoctor --help`` must be instant, and
``diagnose`` never imports a deep-learning framework or ``requests``.
"""

__version__ = "0.1.0"

"""Options shared by the commands that look at a machine."""

from __future__ import annotations

from typing import Any, Callable

import click

from ..host.base import DEFAULT_TIMEOUT
from ..host.live import live_host
from ..host.privacy import scrubber_for

__all__ = ["live_host", "scrubber_for", "privacy_options", "python_option", "timeout_option"]


def timeout_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--timeout", type=click.FloatRange(0.1, 3600), default=DEFAULT_TIMEOUT, show_default=True,
        envvar="ENVDOCTOR_TIMEOUT", metavar="SECONDS",
        help="Longest any one command or NVML query may take; the whole run finishes within it plus about "
             "a second. [env: ENVDOCTOR_TIMEOUT]")(fn)


def privacy_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--include-host", is_flag=True, envvar="ENVDOCTOR_INCLUDE_HOST",
                      help="Keep the host name, user name and home path (hidden by default so output can be "
                           "pasted publicly).")(fn)
    fn = click.option("--redact-ids", is_flag=True, envvar="ENVDOCTOR_REDACT_IDS",
                      help="Replace GPU UUIDs and board serial numbers with placeholders.")(fn)
    return fn


def python_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--python", "python_exe", metavar="PATH", envvar="ENVDOCTOR_PYTHON",
        help="Inspect the packages of this Python interpreter instead of the one running envdoctor "
             "(e.g. a venv's bin/python).")(fn)

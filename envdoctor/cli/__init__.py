"""The ``envdoctor`` command line.

One module per command, loaded only when that command runs so ``--help``
stays instant (the pattern hatch uses).

Exit codes, for every command: 0 ran and found no errors; 1 ran and found
errors (for ``install``: a step failed); 2 could not run as asked (bad
arguments, bad input file, unsupported combination; a broken installation,
see ``envdoctor.launcher.broken_install``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    import click

EXIT_OK, EXIT_FOUND_ERRORS, EXIT_USAGE = 0, 1, 2

#: command name -> (module, function, one-line help)
COMMANDS: Dict[str, tuple] = {
    "diagnose": ("envdoctor.cli.diagnose", "diagnose", "Look at the whole GPU stack and judge it."),
    "snapshot": ("envdoctor.cli.snapshot", "snapshot", "Capture this machine's raw evidence to a file."),
    "advise": ("envdoctor.cli.advise", "advise",
               "Newest CUDA and the exact install command per framework for this driver and GPU."),
    "matrix": ("envdoctor.cli.matrix", "matrix", "Look up the compatibility matrix (each row with its source)."),
    "install": ("envdoctor.cli.install", "install",
                "Print or run the steps that install a component (CUDA, cuDNN...)."),
    "dockerfile": ("envdoctor.cli.dockerfile", "dockerfile",
                   "Judge a Dockerfile's GPU set-up (image tag, driver, nvcc, framework builds) before building it."),
    "libs": ("envdoctor.cli.libs", "libs", "Which CUDA, cuDNN, NCCL and TensorRT files a program or library loads, and "
             "why (the loader's rules, transitively)."),
    "fit": ("envdoctor.cli.fit", "fit", "Will this model fit this GPU? Weights, KV cache, the engine's budget or "
            "training memory, each term derived."),
    "bench": ("envdoctor.cli.bench", "bench", "Measure host<->device, device memory and peer copies, and judge "
              "each against the link it crosses (PCIe, NVLink) and the GPU's memory bandwidth."),
    "explain": ("envdoctor.cli.explain", "explain", "Explain a finding code: what, why, and the rule's source."),
    "fleet": ("envdoctor.cli.fleet", "fleet", "Compare many nodes' reports or snapshots: what differs, what is "
              "wrong where."),
    "check": ("envdoctor.cli.check", "check", "Judge this node against a cluster's policy (a pre-flight gate for "
              "Slurm, NHC, Ansible, Prometheus, Kubernetes)."),
    "topo": ("envdoctor.cli.topo", "topo", "Show how the GPUs are connected (NVLink, PCIe, NUMA) and which "
             "transport NCCL will use between them, with what is wrong on the way."),
    "policy": ("envdoctor.cli.check", "policy", "Write a policy from a known-good node; list the keys a policy "
               "may require."),
    "mcp": ("envdoctor.cli.mcp", "mcp", "Serve the read-only commands to a coding agent (MCP over stdio; "
            "pip install 'envdoctor[mcp]')."),
}

EPILOG = """\b
Exit codes: 0 ran, no errors found; 1 ran, errors found (install: a step
failed); 2 could not run as asked (bad arguments, bad input file).

\b
Examples:
  envdoctor diagnose
  envdoctor diagnose --format json > report.json
  envdoctor snapshot -o node17.json --redact-ids
  envdoctor diagnose --snapshot node17.json -v
  envdoctor fleet reports/ --baseline reports/node01.json
  envdoctor check --policy policy.toml --format nhc
  envdoctor topo
  envdoctor advise --driver 535.104.05 --gpu "RTX 4090"
  envdoctor matrix torch 2.4
  envdoctor fit meta-llama/Llama-3.1-8B-Instruct --context 32768
  envdoctor libs ./my_server /opt/app/lib/libinfer.so
  envdoctor bench --gpu 0
  envdoctor install cuda --version 12.4.1 --method redist --prefix ~/cuda-12.4 --dry-run
"""


def fail(message: str, code: int = EXIT_USAGE) -> click.exceptions.Exit:
    """Print ``message`` to stderr and leave with ``code`` (default 2: could not run as asked).  A message
    may quote the machine (an os-release value, a file name): its control characters show as escapes."""
    import click

    from ..render.style import printable

    click.echo("envdoctor: " + printable(message), err=True)
    return click.exceptions.Exit(code)


def __getattr__(name: str) -> Any:
    """``cli`` (the click group) and ``LazyGroup``, from :mod:`envdoctor.cli.app`: importing this package does not
    import click (a plain ``diagnose`` never needs it)."""
    if name in ("cli", "LazyGroup"):
        from . import app

        return getattr(app, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def main(argv: Optional[List[str]] = None, quick: bool = False) -> Any:
    """Run the command line ``argv``. With ``quick`` (the console script's live ``diagnose``), a command line
    :mod:`envdoctor.cli.fastpath` takes in full runs without click; any other goes through click as always."""
    from ..forked import Interrupted, clean_up, install_signal_handlers

    install_signal_handlers(keep_int=bool(argv) and argv is not None and argv[0] == "install")
    import os

    try:
        os.fstat(1)
    except OSError:
        # Started with stdout closed (`>&-`): the next file opened would take descriptor 1 and receive
        # the output. Say so once and stop.
        _say("envdoctor: standard output is closed; nothing can be written")
        sys.exit(EXIT_USAGE)
    try:
        if quick:
            from . import fastpath

            options = fastpath.parse(argv or [])
            if options is not None:
                return fastpath.run(options)
        from .app import cli

        return cli.main(args=argv, prog_name="envdoctor")
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF, errno.EFBIG, errno.EPIPE):
            raise
        if exc.errno == errno.EPIPE:
            silence_stdout()
            sys.exit(EXIT_OK)
        silence_stdout()
        _say("envdoctor: cannot write the output: %s" % (exc.strerror or exc))
        sys.exit(EXIT_USAGE)
    except (Interrupted, KeyboardInterrupt) as exc:
        import signal

        clean_up()
        signum = getattr(exc, "signum", signal.SIGINT)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        try:
            import click

            click.echo("envdoctor: interrupted (%s)" % name, err=True)
        except OSError:
            pass
        sys.exit(128 + int(signum))
    except BrokenPipeError:
        # The reader went away (`envdoctor explain | head`): not an error of ours, and nothing to say.
        silence_stdout()
        sys.exit(EXIT_OK)


def _say(line: str) -> None:
    """One line on stderr, if stderr can take it."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, AttributeError, ValueError):
        pass


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone (`| head`): nothing more can be said there, and
    the interpreter's own flush at exit would otherwise complain of the broken pipe."""
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

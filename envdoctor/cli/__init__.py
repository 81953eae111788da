"""The ``envdoctor`` command line.

One module per command, loaded only when that command runs so ``--help``
stays instant (the pattern hatch uses).

Exit codes, for every command: 0 ran and found no errors; 1 ran and found
errors (for ``install``: a step failed); 2 could not run as asked (bad
arguments, bad input file, unsupported combination; a broken installation,
see ``envdoctor.launcher.broken_install``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Dict, List, Optional

import click

from .. import __version__

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


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    # A reader that went away (`envdoctor explain | head -1`) is not an error: click's own handler would exit 1
    # before main() below sees it, so the pipe is caught here, where every command (and --help) writes.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except OSError as exc:
            raise _reader_gone(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise _reader_gone(exc) from None


def _reader_gone(exc: OSError) -> BaseException:
    """A closed pipe on stdout: exit 0 quietly (README, Guarantees); any other error as it was."""
    import errno

    if exc.errno != errno.EPIPE:
        return exc
    silence_stdout()
    return click.exceptions.Exit(EXIT_OK)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="envdoctor", message="%(prog)s %(version)s")
def cli() -> None:
    """envdoctor: get a GPU deep-learning machine from "fresh" to "works".

    Probes the OS, NVIDIA driver, GPUs, CUDA toolkits, cuDNN/NCCL, compilers,
    Python frameworks and container runtime; checks them against a sourced
    compatibility matrix; and prints or runs the fix.
    """


def fail(message: str, code: int = EXIT_USAGE) -> click.exceptions.Exit:
    """Print ``message`` to stderr and leave with ``code`` (default 2: could not run as asked).  A message
    may quote the machine (an os-release value, a file name): its control characters show as escapes."""
    from ..render.style import printable

    click.echo("envdoctor: " + printable(message), err=True)
    return click.exceptions.Exit(code)


def main(argv: Optional[List[str]] = None) -> Any:
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

"""``envdoctor dockerfile`` on hostile input: Dockerfiles and build contexts made to hang it, exhaust its memory
or recurse it to death. Each case runs the real command in a child process under a memory limit and a
wall-clock guard, and asserts what a user sees: exit 2 with one line and no traceback (input envdoctor
refuses), or a normal verdict (a legitimate but odd file), within the ``--timeout`` budget.

The guard (``GUARD`` seconds past ``--timeout``) only stops a hung child so the suite ends; the time a run
takes is measured by ``scripts/bench_dockerfile.py``, not asserted here.
"""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 2
JUDGED_TIMEOUT = 60  # a legitimate but odd file is to be judged: its verdict, not its speed, is asserted
GUARD = 30  # seconds past --timeout after which the child is taken for hung
MEMORY = 1024 * 1024 * 1024  # address space a run may map (a healthy run maps ~250 MiB)
HOST = ["--driver", "550.54.15", "--cc", "8.9"]


def _limit_memory():  # in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _run(args, cwd=None, input_bytes=None, timeout=TIMEOUT):
    env = dict(os.environ, LC_ALL="C", PYTHONPATH=ROOT)
    env.pop("ENVDOCTOR_TIMEOUT", None)
    try:
        r = subprocess.run([sys.executable, "-m", "envdoctor", "dockerfile"] + list(args) + HOST
                           + ["--timeout", str(timeout)], cwd=cwd or ROOT, env=env, input=input_bytes,
                           capture_output=True, timeout=timeout + GUARD, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("envdoctor dockerfile %s hung past --timeout %d + %d s" % (" ".join(args), timeout, GUARD))
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def _refused(args, why, **kw):
    """Exit 2, one line on stderr naming the problem, no traceback."""
    code, out, err = _run(args, **kw)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err + out and "Error" not in err.split(":", 1)[0], err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: ") and why in lines[0], err
    return lines[0]


def _judged(args, **kw):
    """A verdict (exit 0 or 1) on stdout, nothing on stderr, no traceback (with a budget a loaded machine meets:
    the file is legitimate, so refusing it at a 2 s deadline would be right too, and is not what is asked)."""
    kw.setdefault("timeout", JUDGED_TIMEOUT)
    code, out, err = _run(args, **kw)
    assert code in (0, 1), (code, out, err)
    assert "Traceback" not in err + out and err.strip() == "", err
    return code, out


def _dockerfile(tmp_path, text, name="Dockerfile"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


# -- no deadline ---------------------------------------------------------------------------------------------

def test_a_fifo_nobody_writes_as_the_dockerfile_is_given_up_at_the_deadline(tmp_path):
    fifo = tmp_path / "Dockerfile"
    os.mkfifo(str(fifo))
    _refused([str(fifo)], "within --timeout")


def test_a_fifo_that_is_written_slowly_and_never_closed_is_given_up_at_the_deadline(tmp_path):
    fifo = str(tmp_path / "Dockerfile")
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer():
        fd = os.open(fifo, os.O_WRONLY)
        try:
            os.write(fd, b"FROM python:3.11-slim\n")
            stop.wait(TIMEOUT + GUARD)
        finally:
            os.close(fd)

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    try:
        _refused([fifo], "within --timeout")
    finally:
        stop.set()
        th.join(5)


def test_process_substitution_still_reads_like_standard_input():
    """`envdoctor dockerfile <(...)` names a pipe (/dev/fd/N): it is read, within the deadline."""
    path = os.path.join(ROOT, "tests", "data", "dockerfiles", "llama-cpp-9665", "Dockerfile")
    cmd = ('"$PY" -m envdoctor dockerfile <(cat "$DF") --driver 550.142 --gpu "RTX 4090" --timeout %d' % TIMEOUT)
    env = dict(os.environ, PY=sys.executable, DF=path, PYTHONPATH=ROOT, LC_ALL="C")
    r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, timeout=TIMEOUT + GUARD)
    out = r.stdout.decode()
    assert r.returncode == 1 and "needs NVIDIA driver >= 560" in " ".join(out.split()), (out, r.stderr)


@pytest.mark.parametrize("name,run", [
    ("requirements.txt", "RUN pip install -r requirements.txt"),
    ("pyproject.toml", "RUN pip install ."),
    ("uv.lock", "RUN uv sync"),
])
def test_a_fifo_in_the_build_context_is_not_waited_for(tmp_path, name, run):
    os.mkfifo(str(tmp_path / name))
    if name == "uv.lock":
        (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch==2.5.1"]\n')
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\n%s\n" % run)
    code, out = _judged([path])
    assert name in out and "not a regular file" in " ".join(out.split()), out


def test_a_requirements_file_linked_to_dev_zero_is_not_read(tmp_path):
    os.symlink("/dev/zero", str(tmp_path / "requirements.txt"))
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nRUN pip install -r requirements.txt\n")
    code, out = _judged([path])
    assert "requirements.txt" in out and "not a regular file" in " ".join(out.split()), out


@pytest.mark.parametrize("body", [
    "RUN pip install " + "a " * (500 * 1024),                      # 1 MiB of words
    "RUN echo " + "x" * (1024 * 1024 - 64),                          # one 1 MiB word
    "RUN echo " + "$A" * (500 * 1024),                               # 1 MiB of expansions
    "RUN " + "<<A " * (200 * 1024),                                  # 200,000 heredoc markers
    "RUN pip install torch==2.4.0\n" * 34000,                        # 34,000 framework lines
], ids=["words", "one-word", "expansions", "heredoc-markers", "framework-lines"])  # short ids: pytest puts the
# test's id in the child's environment (PYTEST_CURRENT_TEST), and a megabyte there is E2BIG on exec
def test_a_megabyte_dockerfile_is_judged_or_refused_within_the_deadline(tmp_path, body):
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nARG A=1\n" + body + "\n")
    code, out, err = _run([path])
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and "within --timeout" in err, err


# -- memory ----------------------------------------------------------------------------------------------------

def test_an_arg_expansion_chain_is_refused_before_it_exhausts_memory(tmp_path):
    """575 bytes asking for 1.1 GB: each ARG four times the one before."""
    lines = ["FROM python:3.11-slim", "ARG A0=" + "x" * 64]
    lines += ["ARG A%d=${A%d}${A%d}${A%d}${A%d}" % (i, i - 1, i - 1, i - 1, i - 1) for i in range(1, 15)]
    lines.append("RUN echo $A14")
    path = _dockerfile(tmp_path, "\n".join(lines) + "\n")
    assert os.path.getsize(path) < 600
    _refused([path], "expands to more than")


def test_an_expansion_repeated_across_a_run_line_is_refused(tmp_path):
    text = "FROM python:3.11-slim\nARG A=%s\nRUN echo %s\n" % ("y" * 60000, "$A " * 100000)
    _refused([_dockerfile(tmp_path, text)], "expands to more than")


def test_a_long_but_bounded_value_is_judged(tmp_path):
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nENV PATH=/opt/venv/bin:%s\nRUN pip install numpy\n"
                       % ":".join("/opt/p%d/bin" % i for i in range(500)))
    assert _judged([path])[0] == 0


# -- recursion and types ---------------------------------------------------------------------------------------

def test_three_thousand_chained_stages(tmp_path):
    lines = ["FROM python:3.11-slim AS s0", "RUN pip install numpy"]
    for i in range(1, 3000):
        lines += ["FROM s%d AS s%d" % (i - 1, i), "ENV V%d=%d" % (i, i), "RUN echo $V%d" % i]
    lines.append("RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124")
    code, out = _judged([_dockerfile(tmp_path, "\n".join(lines) + "\n")])
    assert code == 0, out


def test_an_exec_form_run_with_fifty_thousand_brackets(tmp_path):
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nRUN " + "[" * 50000 + "\n")
    assert _judged([path])[0] == 0


def test_a_context_toml_nested_five_thousand_deep(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nRUN pip install .\n")
    code, out = _judged([path])
    assert "pyproject.toml" in out and "could not be read" in " ".join(out.split()), out


@pytest.mark.parametrize("toml", [
    '[project]\nname = "x"\ndependencies = 5\n',
    '[project]\nname = "x"\ndependencies = "torch"\noptional-dependencies = 3\n',
    '[project]\nname = "x"\ndependencies = ["torch"]\n[tool.uv]\nindex = 7\n',
    '[project]\nname = "x"\ndependencies = ["torch"]\n[[tool.uv.index]]\nname = ["a"]\nurl = 1\n'
    '[tool.uv.sources]\ntorch = { index = ["a"] }\n',
])
def test_context_toml_of_the_wrong_types_is_not_a_traceback(tmp_path, toml):
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "uv.lock").write_text("package = 5\n")
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nRUN pip install .[gpu] && uv sync\n")
    _judged([path])


def test_a_context_that_does_not_exist_is_a_usage_error(tmp_path):
    path = _dockerfile(tmp_path, "FROM python:3.11-slim\nRUN pip install -r requirements.txt\n")
    line = _refused([path, "--context", str(tmp_path / "nonexistent")], "--context")
    assert "nonexistent" in line
    _refused([path, "--context", path], "not a directory")


def test_a_dockerfile_that_is_a_directory_or_a_device_is_refused(tmp_path):
    _refused([str(tmp_path)], "cannot read")
    _refused(["/dev/zero"], "larger than")


def test_the_memory_limit_leaves_room_for_a_normal_run():
    """The limit the cases above run under is not what makes them pass or fail."""
    path = os.path.join(ROOT, "tests", "data", "dockerfiles", "iflame-2", "Dockerfile")
    assert _judged([path])[0] == 0
    assert not stat.S_ISFIFO(os.stat(path).st_mode)

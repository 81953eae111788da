"""Issue 14, part 2: plans right for the system they are printed for, and pip executed for real.

Machines are replayed through the Host seam (tests.test_recipes_frameworks.machine_facts: real
/etc/os-release, NVML answers of a fake driver), the pip test runs the executor for real: a fresh
virtual environment, pip against a PEP 503 index on 127.0.0.1 that serves wheels built here.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import os
import re
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple

import pytest

from envdoctor.facts import Facts, ok
from envdoctor.install.executor import Executor
from envdoctor.install.plan import Plan, RunCommand, Step, why_line
from envdoctor.recipes import RecipeError, Request, cuda_redist, load_recipe, parse_target
from tests.conftest import snapshot_report
from tests.test_install_redist import REAL_CUDA_12_4_1, REAL_CUDNN_9_1_0
from tests.test_recipes_frameworks import machine_facts

UBUNTU = parse_target("ubuntu22.04")


def _facts(**kv) -> Facts:
    return Facts([ok(k, v, "test") for k, v in kv.items()])


# -- cuDNN / NCCL versions and variants ------------------------------------------------
def test_cudnn_version_prefix_resolves_to_the_newest_matching_release():
    cudnn = load_recipe("cudnn")
    p = cudnn.plan(Request("cudnn", "8.9", "pip", python="/opt/v/bin/python"), UBUNTU, Facts())
    assert p.version == "8.9.7"  # was 8.6.0 (the newest row at or below "8.9")
    argv = next(s.action.argv for s in p.steps if s.id == "pip-install")
    assert argv[-1] == "nvidia-cudnn-cu12==8.9.*"
    assert cudnn.plan(Request("cudnn", "9", "repo"), UBUNTU, Facts()).version == cudnn.versions()[-1]


def test_cudnn_build_follows_the_drivers_cuda_major():
    cudnn = load_recipe("cudnn")
    on_11 = _facts(**{"driver.cuda_version": "11.8"})
    p = cudnn.plan(Request("cudnn", "8.9", "pip", python="/opt/v/bin/python"), UBUNTU, on_11)
    assert next(s.action.argv for s in p.steps if s.id == "pip-install")[-1] == "nvidia-cudnn-cu11==8.9.*"
    with pytest.raises(RecipeError, match="runs CUDA 11 at most"):
        cudnn.plan(Request("cudnn", "9.14", "pip", python="/opt/v/bin/python"), UBUNTU, on_11)


def test_cudnn_redist_variant_follows_the_driver():
    m = cuda_redist.parse_manifest(REAL_CUDNN_9_1_0)
    req = cuda_redist.RedistRequest("cudnn", "9.1.0", "/scratch/u/cudnn", driver_cuda_major=11)
    (arch,) = cuda_redist.select(req, m)
    assert arch.filename.endswith("_cuda11-archive.tar.xz")  # was: the newest (cuda12) whatever the driver
    req.driver_cuda_major = 13  # a CUDA 13 driver runs the CUDA 12 build
    assert cuda_redist.select(req, m)[0].filename.endswith("_cuda12-archive.tar.xz")
    req.driver_cuda_major = 10
    with pytest.raises(Exception, match="runs CUDA 10 at most"):
        cuda_redist.select(req, m)


def test_nccl_knows_current_releases_with_cuda_13_builds():
    nccl = load_recipe("nccl")
    assert "2.28.9" in nccl.versions()
    p = nccl.plan(Request("nccl", None, "repo"), UBUNTU, _facts(**{"driver.cuda_version": "13.0"}))
    argv = next(s.action.argv for s in p.steps if s.id == "install-nccl")
    assert argv[-2:] == ["libnccl2=2.28.9-1+cuda13.0", "libnccl-dev=2.28.9-1+cuda13.0"]
    p = nccl.plan(Request("nccl", "2.28", "repo"), UBUNTU, _facts(**{"driver.cuda_version": "12.4"}))
    assert next(s.action.argv for s in p.steps if s.id == "install-nccl")[-1] == "libnccl-dev=2.28.9-1+cuda12.9"


# -- CUDA on an older driver: minor-version compatibility ---------------------------------
def test_cuda_12_4_on_driver_535_plans_with_minor_version_compatibility():
    facts = machine_facts("535.104.05", 12020, [[9, 0]])
    p = load_recipe("cuda").plan(Request("cuda", "12.4", None), UBUNTU, facts)
    said = " ".join(p.notes)
    assert "minor-version compatibility" in said and "PTX JIT" in said
    assert not p.reboot_required and not any(s.id == "install-driver" for s in p.steps)


def _preflight(plan, facts):
    """install's pre-flight of ``plan`` (the checks on the facts after it): RecipeError when it refuses."""
    from envdoctor.cli.install import preflight_check

    preflight_check(plan, facts, (), load_recipe(plan.component))


def test_cuda_of_a_newer_major_is_still_refused_on_an_old_driver():
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    plan = load_recipe("cuda").plan(Request("cuda", "12.4", "conda"), UBUNTU, facts)
    with pytest.raises(RecipeError, match="driver.too_old_for_toolkit: .* needs CUDA 12.4") as err:
        _preflight(plan, facts)
    assert "envdoctor install driver --version 550" in err.value.alternatives


def test_redist_cuda_checks_the_driver_too():
    m = cuda_redist.parse_manifest(REAL_CUDA_12_4_1)
    req = cuda_redist.RedistRequest("cuda", "12.4.1", "/scratch/u/cuda-12.4")
    old = machine_facts("470.82.01", 11040, [[8, 0]])
    with pytest.raises(RecipeError, match="driver.too_old_for_toolkit"):
        _preflight(cuda_redist.plan(req, m, old), old)
    p = cuda_redist.plan(req, m, machine_facts("535.104.05", 12020, [[9, 0]]))
    assert any("minor-version compatibility" in n for n in p.notes)


# -- pip: never a Python outside any environment, never a tool installer's environment ---------
def test_pip_on_a_system_python_makes_a_venv_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    facts = _facts(**{"python.executable": "/usr/bin/python3",
                      "python.environment": {"kind": "system", "prefix": "/usr", "base_prefix": "/usr",
                                             "externally_managed": True}})
    p = load_recipe("pytorch").plan(Request("pytorch", "2.7", "pip", options={"cuda": "cpu"}), UBUNTU, facts)
    venv = str(tmp_path / "data" / "envdoctor" / "venvs" / "pytorch")
    assert p.steps[0].action.argv == ["/usr/bin/python3", "-m", "venv", venv]
    assert next(s for s in p.steps if s.id == "pip-install").action.argv[0] == venv + "/bin/python"
    assert "PEP 668" in p.notes[0] and venv in p.notes[0]
    # A pyenv interpreter is no environment either, but nobody marked it externally managed: not PEP 668.
    pyenv = _facts(**{"python.executable": "/home/u/.pyenv/versions/3.11.7/bin/python3",
                      "python.environment": {"kind": "system", "prefix": "/home/u/.pyenv/versions/3.11.7",
                                             "base_prefix": "/home/u/.pyenv/versions/3.11.7",
                                             "externally_managed": False}})
    p = load_recipe("pytorch").plan(Request("pytorch", "2.7", "pip", options={"cuda": "cpu"}), UBUNTU, pyenv)
    assert p.steps[0].action.argv[0] == "/home/u/.pyenv/versions/3.11.7/bin/python3"
    assert "PEP 668" not in p.notes[0] and "distribution" not in p.notes[0], p.notes[0]
    p = load_recipe("pytorch").plan(Request("pytorch", "2.7", "pip", options={"cuda": "cpu"},
                                            venv="/opt/venvs/t"), UBUNTU, facts)
    assert next(s for s in p.steps if s.id == "pip-install").action.argv[0] == "/opt/venvs/t/bin/python"
    p = load_recipe("pytorch").plan(Request("pytorch", "2.7", "pip", options={"cuda": "cpu"},
                                            python="/usr/bin/python3"), UBUNTU, facts)
    assert p.steps[0].id == "check-python" and p.steps[1].action.argv[0] == "/usr/bin/python3"  # --python wins


def test_pip_uses_the_inspected_venv_but_never_a_tool_installer_s(tmp_path):
    theirs = _facts(**{"python.executable": "/work/proj/.venv/bin/python",
                       "python.environment": {"kind": "venv", "prefix": "/work/proj/.venv", "base_prefix": "/usr"}})
    p = load_recipe("jax").plan(Request("jax", None, "pip", options={"cuda": "cpu"}), UBUNTU, theirs)
    assert next(s for s in p.steps if s.id == "pip-install").action.argv[0] == "/work/proj/.venv/bin/python"
    # The venv envdoctor was pip-installed into is the user's own: that is where pip installs.
    own = _facts(**{"python.executable": sys.executable,
                    "python.environment": {"kind": "venv", "prefix": sys.prefix, "base_prefix": sys.base_prefix}})
    p = load_recipe("jax").plan(Request("jax", None, "pip", options={"cuda": "cpu"}), UBUNTU, own)
    assert next(s for s in p.steps if s.id == "pip-install").action.argv[0] == sys.executable
    # pipx's environment for envdoctor (it left pipx_metadata.json): never.
    tool = _facts(**{"python.executable": "/home/u/.local/pipx/venvs/envdoctor/bin/python",
                     "python.environment": {"kind": "venv", "prefix": "/home/u/.local/pipx/venvs/envdoctor",
                                            "base_prefix": "/usr", "tool": "pipx"}})
    p = load_recipe("jax").plan(Request("jax", None, "pip", options={"cuda": "cpu"}), UBUNTU, tool)
    pip = next(s for s in p.steps if s.id == "pip-install").action.argv[0]
    assert pip.endswith("/envdoctor/venvs/jax/bin/python") and p.steps[0].id == "create-venv"
    assert "pipx made for envdoctor" in p.notes[0]


# -- command output: streamed, and the line that says why ---------------------------------
def test_why_quotes_the_network_line_not_the_last_one(tmp_path, monkeypatch):
    """pip run for real against a host that does not exist (.invalid never resolves): its last lines say
    "No matching distribution found", the line above them says why (the name does not resolve)."""
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    argv = [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--retries",
            "1", "--timeout", "2", "--index-url", "https://envdoctor-test.invalid/whl/cu126", "torch==2.7.*"]
    plan = Plan("p", "pytorch", "2.7", "pip", "t", steps=[Step("pip-install", "pip install", RunCommand(argv, 120))])
    lines: List[str] = []
    result = Executor(lines.append, yes=True, uid=lambda: 1000, log_path=str(tmp_path / "l.log")).execute(plan)
    assert result.exit_code == 1
    assert "No matching distribution found" in lines[-2]
    why = result.message.split("why: ", 1)[1].splitlines()[0]
    # pip words it by its urllib3: "Failed to establish a new connection: ... name resolution" (1.x) or
    # "NameResolutionError(... Failed to resolve ...)" (2.x); either is the line that says why.
    assert any(s in why.lower() for s in ("failed to establish a new connection", "name resolution",
                                          "nameresolutionerror", "failed to resolve")), why
    # pip's message for a full disk (its format: "ERROR: Could not install packages due to an OSError: ...")
    assert "No space left on device" in why_line(["Collecting torch", "ERROR: Could not install packages due to an "
                                                  "OSError: [Errno 28] No space left on device", "", "[notice] x"])


def test_output_is_streamed_while_the_command_runs(tmp_path):
    seen: List[str] = []
    stamp = tmp_path / "second-line-seen"

    def out(line: str) -> None:
        seen.append(line)
        if "first" in line:
            stamp.write_text("x")  # the command waits for this before it prints its second line

    code = "import os, sys, time\nprint('first', flush=True)\nfor _ in range(100):\n" \
           "    if os.path.exists(sys.argv[1]): break\n    time.sleep(0.05)\nelse: sys.exit('never streamed')\n" \
           "print('second')"
    plan = Plan("p", "x", "1", "pip", "t", steps=[Step("s", "stream", RunCommand([sys.executable, "-c", code,
                                                                                   str(stamp)], 30))])
    result = Executor(out, yes=True, uid=lambda: 1000, log_path=str(tmp_path / "l.log")).execute(plan)
    assert result.exit_code == 0, seen
    assert "    | first" in seen and "    | second" in seen
    assert "    | second" in open(str(tmp_path / "l.log")).read()


# -- pip for real: a loopback PEP 503 index, a fresh venv ----------------------------------------
def _wheel(name: str, version: str, files: Dict[str, str]) -> bytes:
    """A pure-Python wheel (PEP 427): the files, METADATA, WHEEL and RECORD."""
    dist = f"{name}-{version}.dist-info"
    content = dict(files)
    content[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    content[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\n"
                                "Tag: py3-none-any\n")
    record = []
    for path, text in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    content[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in content.items():
            z.writestr(path, text)
    return buf.getvalue()


def _index(wheels: Dict[str, Dict[str, bytes]]):
    """A PEP 503 simple index on 127.0.0.1: /whl/<tag>/<project>/ lists that tag's wheels."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            if len(parts) == 3 and parts[0] == "whl" and parts[1] in wheels:  # /whl/<tag>/<project>/
                files = {f: d for f, d in wheels[parts[1]].items() if f.split("-")[0] == parts[2].replace("-", "_")}
                if not files:
                    self.send_error(404)
                    return
                body = "<!DOCTYPE html><html><body>" + "".join(
                    f'<a href="{f}#sha256={hashlib.sha256(d).hexdigest()}">{f}</a>' for f, d in files.items()) + \
                    "</body></html>"
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
            elif len(parts) == 4 and parts[0] == "whl" and parts[3] in wheels.get(parts[1], {}):
                data = wheels[parts[1]][parts[3]]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
            else:
                self.send_error(404)
                return
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, "http://127.0.0.1:%d/whl" % httpd.server_address[1]


#: A stand-in for a CUDA build of torch that cannot see the GPU (the shape of a wheel built for a CUDA the
#: driver does not run): torch.cuda.is_available() is False.
FAKE_TORCH = {"torch/__init__.py": "__version__ = '{v}+cu126'\nfrom . import cuda, version\n",
              "torch/version.py": "cuda = '12.6'\n", "torch/cuda.py": "def is_available():\n    return False\n"}


def _venv_can_be_made(tmp_path) -> bool:
    r = subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "probe")], capture_output=True, timeout=300)
    return r.returncode == 0


def test_pip_plan_installs_into_a_fresh_venv_and_fails_when_the_gpu_machine_sees_no_gpu(tmp_path, monkeypatch):
    if not _venv_can_be_made(tmp_path):
        pytest.skip("this Python cannot create virtual environments (python3-venv missing)")
    torch = load_recipe("pytorch")
    facts = machine_facts("570.124.06", 12080, [[9, 0]], ["NVIDIA H100 80GB HBM3"])
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # this machine's pip settings (find-links, ...) stay out
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    plan0 = torch.plan(Request("pytorch", "2.7", "pip", mirror="http://127.0.0.1:1/whl",
                               venv=str(tmp_path / "venv")), UBUNTU, facts)
    tag = next(s.action.argv for s in plan0.steps if s.id == "pip-install")[-1].rsplit("/", 1)[-1]
    files = {k: v.format(v="2.7.1") for k, v in FAKE_TORCH.items()}
    httpd, url = _index({tag: {"torch-2.7.1-py3-none-any.whl": _wheel("torch", "2.7.1", files)}})
    try:
        plan = torch.plan(Request("pytorch", "2.7", "pip", mirror=url, venv=str(tmp_path / "venv")), UBUNTU, facts)
        assert [s.id for s in plan.steps] == ["create-venv", "check-python", "pip-install", "import-check"]
        lines: List[str] = []
        result = Executor(lines.append, yes=True, log_path=str(tmp_path / "i.log")).execute(plan)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert os.path.isfile(str(tmp_path / "venv" / "bin" / "python"))
    assert any("Successfully installed torch-2.7.1" in ln for ln in lines)  # pip's own output, streamed
    assert result.exit_code == 1 and result.outcomes[-1].id == "import-check"
    assert "sees no GPU on this GPU machine" in result.message, result.message
    # the CPU build on a machine without a GPU passes the same import check
    code = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", torch.SMOKE], capture_output=True,
                          text=True, timeout=60)
    assert code.returncode == 0 and "False" in code.stdout


def test_tensorflow_2_16_smoke_names_the_known_cause():
    tf = load_recipe("tensorflow")
    assert "tensorflow/issues/63362" in tf.SMOKE_GPU
    facts = machine_facts("570.124.06", 12080, [[9, 0]], ["NVIDIA H100 80GB HBM3"])
    p = tf.plan(Request("tensorflow", "2.16", "pip", python="/opt/v/bin/python"), UBUNTU, facts)
    smoke = next(s.action.argv for s in p.steps if s.id == "import-check")[-1]
    assert smoke == tf.SMOKE_GPU
    # run the check itself against a stand-in TensorFlow 2.16.1 that sees no GPU
    fake = "import sys, types\ntf = types.ModuleType('tensorflow')\ntf.__version__ = '2.16.1'\n" \
           "tf.config = types.SimpleNamespace(list_physical_devices=lambda kind: [])\n" \
           "sys.modules['tensorflow'] = tf\n"
    r = subprocess.run([sys.executable, "-c", fake + smoke], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "issues/63362" in r.stderr and "2.17" in r.stderr


# -- the driver: pre-installation steps, branch locking, Secure Boot ---------------------------------
@pytest.mark.parametrize("target,branch,last", [
    # issue 14: each of these was refused ("cannot be pinned", "not a supported target", "cannot yet pin")
    ("centos7", "495", ["yum", "install", "-y", "nvidia-driver-branch-495"]),
    ("centos9", "560", ["dnf", "versionlock", "add", "*nvidia*560*"]),
    ("debian12", "580", ["apt-get", "install", "-y", "nvidia-open"]),
])
def test_driver_branches_that_were_refused_now_plan(target, branch, last):
    p = load_recipe("driver").plan(Request("driver", branch, None), parse_target(target), Facts())
    argvs = [s.action.argv for s in p.steps]
    assert argvs[-1] == last and p.reboot_required
    assert any("headers" in " ".join(a) and "uname -r" in " ".join(a) for a in argvs)  # the running kernel's


def test_driver_pre_installation_steps_per_system():
    def argvs(target: str) -> List[List[str]]:
        return [s.action.argv for s in load_recipe("driver").plan(Request("driver", None, None),
                                                                   parse_target(target), Facts()).steps]

    assert ["add-apt-repository", "-y", "contrib"] in argvs("debian12")
    assert ["add-apt-repository", "-y", "contrib"] not in argvs("ubuntu24.04")
    assert ["dnf", "config-manager", "--set-enabled", "powertools"] in argvs("rocky8")
    assert ["dnf", "config-manager", "--set-enabled", "crb"] in argvs("almalinux9")
    assert ["subscription-manager", "repos", "--enable", "codeready-builder-for-rhel-9-x86_64-rpms"] in argvs("rhel9")
    assert any(a[-1].endswith("epel-release-latest-8.noarch.rpm") for a in argvs("rhel8"))
    assert ["yum", "install", "-y", "epel-release"] in argvs("centos7")
    for t in ("rocky8", "rhel9", "centos7", "debian12"):  # EPEL / contrib before the driver, headers too
        a = argvs(t)
        assert a.index(next(x for x in a if "uname -r" in " ".join(x))) < len(a) - 1


def test_secure_boot_adds_the_mok_enrolment_step():
    facts = _facts(**{"driver.secure_boot": True})
    p = load_recipe("driver").plan(Request("driver", "580", None), parse_target("ubuntu24.04"), facts)
    assert p.mok_enrolment and p.steps[-1].action.argv == ["mokutil", "--import", "/var/lib/dkms/mok.pub",
                                                           "--root-pw"]
    p = load_recipe("driver").plan(Request("driver", "580", None), parse_target("ubuntu24.04"), Facts())
    assert not p.mok_enrolment and not any(s.id == "enroll-mok" for s in p.steps)


def test_cli_plans_the_issue_driver_commands(tmp_path):
    from click.testing import CliRunner

    from envdoctor.cli.install import install

    for target, branch in (("centos7", "495"), ("centos9", "560"), ("debian12", "580")):
        r = CliRunner().invoke(install, ["driver", "--version", branch, "--os", target, "--dry-run", "--format",
                                         "text"])
        assert r.exit_code == 0, r.output
        assert "cannot" not in r.output


# -- container-toolkit: the runtimes present ---------------------------------------------------
def _toolkit(runtimes) -> List[List[str]]:
    facts = _facts(**{"install.runtimes": runtimes})
    return [s.action.argv for s in load_recipe("container-toolkit").plan(
        Request("container-toolkit", None, None), UBUNTU, facts).steps if isinstance(s.action, RunCommand)]


def test_container_toolkit_configures_the_runtimes_present():
    k8s = _toolkit({"systemd": True, "kubelet": True, "runtimes": {"containerd": {"systemd": True}}})
    assert ["nvidia-ctk", "runtime", "configure", "--runtime=containerd"] in k8s
    assert ["systemctl", "restart", "containerd"] in k8s and not any("docker" in " ".join(a) for a in k8s)
    crio = _toolkit({"systemd": True, "runtimes": {"crio": {"systemd": True}, "podman": {"systemd": False}}})
    assert ["nvidia-ctk", "runtime", "configure", "--runtime=crio"] in crio and ["systemctl", "restart", "crio"] in crio
    assert ["nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml"] in crio
    docker = _toolkit({"systemd": True, "runtimes": {"docker": {"systemd": True}, "containerd": {"systemd": True}}})
    assert ["systemctl", "restart", "docker"] in docker
    assert not any("containerd" in " ".join(a) for a in docker)  # Docker's own containerd is left alone


def test_container_toolkit_without_systemd_prints_the_restart_instead():
    facts = _facts(**{"install.runtimes": {"systemd": False, "runtimes": {"docker": {"systemd": False}}}})
    p = load_recipe("container-toolkit").plan(Request("container-toolkit", None, None), UBUNTU, facts)
    argvs = [s.action.argv for s in p.steps if isinstance(s.action, RunCommand)]
    assert ["nvidia-ctk", "runtime", "configure", "--runtime=docker"] in argvs
    assert not any(a[0] == "systemctl" for a in argvs)
    assert any("not managed by systemd" in n and "restart" in n for n in p.notes)


def test_runtime_detection_reads_programs_and_units():
    from envdoctor.install.runtimes import detect

    present = {"/run/systemd/system", "/usr/sbin/crio", "/usr/lib/systemd/system/crio.service"}
    seen = detect(which=lambda name: "/usr/bin/podman" if name == "podman" else None, exists=present.__contains__)
    assert seen == {"systemd": True, "kubelet": False,
                    "runtimes": {"crio": {"systemd": True}, "podman": {"systemd": False}}}


# -- every alternative and hint is a command `envdoctor install` accepts --------------------------------
TARGETS = ("ubuntu22.04", "centos7", "rhel9")
#: (request, target, RecipeError) of every refusal _plan_texts met (filled when it first runs).
REFUSED: List[tuple] = []
#: The tests that read _plan_texts run on one test worker (``--dist loadgroup``): its matrix of requests is planned
#: once per process, and would be planned again on every worker one of them landed on.
PLAN_TEXTS = pytest.mark.xdist_group("install-plan-texts")


@functools.lru_cache(maxsize=None)
def _plan_texts() -> Tuple[Tuple[str, str, str, str], ...]:
    """(component, target, where, text) for every text a plan or a refusal shows, over a matrix of requests.

    ``where``: "alternative" (a refusal's alternatives), "why" (a refusal's message), "note", "title" (the
    plan's and its steps'), "resume".  The requests: every recipe x method (and a bogus one) x target x a few
    versions x machines (no facts; driver 470 on an A100; 535 on an H100, which needs minor-version
    compatibility; 580 on a P100; no driver at all) x options x --with-driver; and the redist plans of the real
    CUDA 12.4.1 and cuDNN 9.1.0 manifests on the same machines.
    """
    from envdoctor.cli.install import _resume_command
    from envdoctor.recipes import RECIPES

    facts_variants = [Facts(), machine_facts("470.82.01", 11040, [[8, 0]]),
                      machine_facts("535.104.05", 12020, [[9, 0]]),
                      machine_facts("580.65.06", 13000, [[6, 0]], ["Tesla P100"]),
                      _facts(**{"driver.installed": False})]
    options = [{}, {"flavor": "bogus"}, {"cuda": "11"}, {"cuda": "13"}, {"nonsense": "1"},
               {"variant": "base", "cudnn": "yes", "channel": "x"}]
    out = set()

    def plan_texts(comp: str, target: str, plan: Plan) -> None:
        out.add((comp, target, "title", plan.title))
        out.update((comp, target, "title", st.title) for st in plan.steps)
        out.update((comp, target, "note", n) for n in plan.notes)
        if plan.resume_command:
            out.add((comp, target, "resume", plan.resume_command))

    def refusal_texts(comp: str, target: str, exc: RecipeError, request: Any = None) -> None:
        if request is not None:
            REFUSED.append((request, target, exc))
        out.add((comp, target, "why", exc.message))
        out.update((comp, target, "alternative", alt) for alt in exc.alternatives)

    for comp in sorted(RECIPES):
        mod = load_recipe(comp)
        vers = [None, "99.9", "1.0"] + list(mod.versions())[::2]
        for method in list(mod.METHODS) + ["bogus"]:
            for target in TARGETS:
                for v in vers:
                    for facts in facts_variants:
                        for opts in options:
                            for extra in ({}, {"with_driver": True}):
                                request = Request(comp, v, method, python="/opt/v/bin/python", options=opts,
                                                  **extra)
                                try:
                                    plan_texts(comp, target, mod.plan(request, parse_target(target), facts))
                                except RecipeError as exc:
                                    refusal_texts(comp, target, exc, request)
    for comp, doc in (("cuda", REAL_CUDA_12_4_1), ("cudnn", REAL_CUDNN_9_1_0)):
        manifest = cuda_redist.parse_manifest(doc)
        for facts in facts_variants:
            resume = _resume_command(comp, manifest.release_label, "redist", f"/scratch/u/{comp}", [], None,
                                     "linux-x86_64", "", False, None)
            req = cuda_redist.RedistRequest(comp, manifest.release_label, f"/scratch/u/{comp}",
                                            resume_command=resume)
            try:
                plan_texts(comp, "ubuntu22.04", cuda_redist.plan(req, manifest, facts))
            except RecipeError as exc:
                refusal_texts(comp, "ubuntu22.04", exc)
    return tuple(sorted(out))


def _alternatives() -> List[tuple]:
    return sorted({(comp, text) for comp, _t, where, text in _plan_texts() if where == "alternative"})


#: What a command-line word is made of; anything else (``)``, a quote, ``(``) ends the command.
WORD = re.compile(r"[\w.~/=+:@,%-]*")


def install_commands(text: str) -> List[List[str]]:
    """Each ``envdoctor install ...`` in ``text`` as its argument list: the words after it that the command's
    grammar takes (the component, then options with their values), up to the first word it would not take
    ("and", "(the newest ...") or a word that closes the clause (``550)``, ``driver,``, ``12.4.``, ``2.17)"}``)."""
    import click

    from envdoctor.cli.install import install

    takes_value = {}
    for param in install.params:
        if isinstance(param, click.Option):
            for name in param.opts + param.secondary_opts:
                takes_value[name] = not param.is_flag
    commands = []
    for tail in text.split("envdoctor install ")[1:]:
        args: List[str] = []
        want_value = False
        for raw in tail.split():
            word = WORD.match(raw).group(0)  # type: ignore[union-attr] - the pattern matches the empty string
            closes = word != raw or word[-1:] in (",", ";", ":", ".")
            word = word.rstrip(",;:.")
            if not word:
                break
            if want_value:
                args.append(word)
                want_value = False
            elif word.startswith("--"):
                name = word.split("=", 1)[0]
                if name not in takes_value:
                    args.append(word)  # an option the command lacks: kept, so the parse below names it
                    break
                args.append(word)
                want_value = takes_value[name] and "=" not in word
            elif not args:
                args.append(word)  # the component
            else:
                break
            if closes:
                break
        commands.append(args)
    return commands


def test_install_commands_are_cut_where_the_prose_goes_on():
    assert install_commands("(add --with-driver, or: envdoctor install driver --version 550)") == [
        ["driver", "--version", "550"]]
    assert install_commands("TensorFlow 2.15 uses the system CUDA 12.2: envdoctor install cuda --version 12.2 "
                            "--method redist --prefix ~/cuda-12.2 and envdoctor install cudnn (tested build)") == [
        ["cuda", "--version", "12.2", "--method", "redist", "--prefix", "~/cuda-12.2"], ["cudnn"]]
    assert install_commands("driver (envdoctor install driver, or --with-driver, for newer ones)") == [["driver"]]
    assert install_commands("envdoctor install jax --method pip (CPU only: pip install jax)") == [
        ["jax", "--method", "pip"]]
    assert install_commands("For full support: envdoctor install driver --version 550 (https://x/).") == [
        ["driver", "--version", "550"]]
    assert install_commands("envdoctor install driver --flavor open") == [["driver", "--flavor"]]
    # a hint quoted inside the smoke test's Python source, inside a shell-quoted `docker run` line
    assert install_commands("""known = {'2.16': 'install 2.17 (envdoctor install tensorflow --version 2.17)"}'""") == [
        ["tensorflow", "--version", "2.17"]]


@PLAN_TEXTS
def test_every_install_command_in_a_plan_or_refusal_plans_with_dry_run(tmp_path, monkeypatch):
    """Every ``envdoctor install ...`` that a plan's notes and titles, its resume command, a refusal's reason or its
    alternatives show is run with ``--dry-run`` (for the target it was printed for, unless it names one): it plans
    (exit 0), as printed.  It was not so: ``--option cuda=VALUE`` placeholders, and cuDNN alternatives without
    the method they need (``cudnn --version 8.9``: refused, the repo method installs cuDNN 9 only).  The redist
    commands (``--prefix``) need NVIDIA's manifest from the network: their options are parsed and their values
    validated only."""
    from click.testing import CliRunner

    from envdoctor.cli.install import install
    from envdoctor.install import validate

    monkeypatch.setenv("HOME", str(tmp_path))  # ~ in the hints, and where a pip plan would put its venv
    found = {}
    wheres = set()
    for comp, target, where, text in _plan_texts():
        for args in install_commands(text):
            found.setdefault((tuple(args), target), (comp, where, text))
            wheres.add(where)
    assert {"alternative", "note", "resume"} <= wheres, wheres  # hints in prose are collected, not only alternatives
    assert len(found) > 40, len(found)
    bad = []
    usage = ("No such option", "is not a release number", "Invalid value", "Missing argument", "Got unexpected",
             "no such option", "not a method name")
    for (args, target), (comp, where, text) in sorted(found.items()):
        argv = [os.path.expanduser(a) if a.startswith("~") else a for a in args]
        said = f"{comp} {where} on {target}: {' '.join(args)!r} (from {text[:160]!r})"
        if "--prefix" in argv:
            try:
                params = install.make_context("install", list(argv)).params
                if params["version"]:
                    validate.version(params["version"])
                validate.prefix(params["prefix"])
            except Exception as exc:  # noqa: BLE001
                bad.append(f"{said}: {exc}")
            continue
        if "--os" not in argv:
            argv += ["--os", target]
        r = CliRunner().invoke(install, argv + ["--dry-run", "--format", "json"])
        if r.exit_code != 0 or any(u in r.output for u in usage) or "Traceback" in r.output:
            bad.append(f"{said}: exit {r.exit_code}: {r.output[-300:]}")
    assert not bad, "\n".join(bad)


def _as_planned(args: List[str], target: str) -> tuple:
    """What ``envdoctor install ARGS`` plans: component, method (the recipe's default when not given), version,
    the options, --with-driver, --prefix, --os (the target it was printed for when not given)."""
    return _as_planned_once(tuple(args), target)


@functools.lru_cache(maxsize=None)
def _as_planned_once(args: Tuple[str, ...], target: str) -> tuple:
    # the refusals repeat the same commands and alternatives many times over: each is parsed once
    from envdoctor.cli.install import install

    p = install.make_context("install", list(args)).params
    mod = load_recipe(p["component"])
    method = p["method"] or ("redist" if p["prefix"] and p["component"] in ("cuda", "cudnn") else
                             mod.default_method(parse_target(p["os_name"] or target)))
    return (p["component"], method, p["version"], tuple(sorted(p["extra"])), p["with_driver"], p["prefix"],
            p["os_name"] or target)


@PLAN_TEXTS
def test_no_alternative_is_the_refused_command_itself():
    """issue 20: `install cudnn --method repo --version 8.9.7 --os ubuntu22.04` was refused, and its alternatives
    offered `--method repo --version 8.9.7`, the very command. Over every refusal of the request matrix: an
    alternative (a whole command, or options that amend the refused one) never plans what was refused."""
    import shlex

    _plan_texts()
    assert len(REFUSED) > 100
    bad = []
    for request, target, exc in REFUSED:
        refused = [request.component] + (["--version", request.version] if request.version else []) + (
            ["--method", request.method] if request.method else []) + [
            "--option=%s=%s" % kv for kv in sorted(request.options.items())] + (
            ["--with-driver"] if request.with_driver else [])
        try:
            same = _as_planned(refused, target)
        except Exception:  # noqa: BLE001 - a refused value the command line itself rejects (bogus method)
            continue
        for alt in exc.alternatives:
            words = shlex.split(alt.split(" (", 1)[0].replace("~", "/home/u"))
            if words[:2] == ["envdoctor", "install"]:
                args = words[2:]
            elif words and words[0].startswith("--"):
                args = refused + words
            else:
                continue
            try:
                if _as_planned(args, target) == same:
                    bad.append((target, " ".join(refused), exc.message[:80], alt))
            except Exception:  # noqa: BLE001 - test_every_alternative_is_a_command... judges the grammar
                continue
    assert not bad, bad[:5]


def test_cudnn_8_is_planned_from_nvidia_s_repository_pinned():
    """issue 20: NVIDIA's repositories carry cuDNN 8 (libcudnn8=8.9.7.29-1+cuda12.2); the repo method plans it."""
    from click.testing import CliRunner

    from envdoctor.cli.install import install

    r = CliRunner().invoke(install, ["cudnn", "--method", "repo", "--version", "8.9.7", "--os", "ubuntu22.04",
                                     "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "apt-get install -y libcudnn8=8.9.7.29-1+cuda12.2 libcudnn8-dev=8.9.7.29-1+cuda12.2" in r.output
    assert "apt-mark hold libcudnn8 libcudnn8-dev" in r.output
    r = CliRunner().invoke(install, ["cudnn", "--method", "repo", "--version", "8.9.7", "--os", "rhel9", "--dry-run"])
    assert "dnf install -y libcudnn8-8.9.7.29-1.cuda12.2 libcudnn8-devel-8.9.7.29-1.cuda12.2" in r.output, r.output
    r = CliRunner().invoke(install, ["cudnn", "--method", "repo", "--version", "8.9.7", "--option", "cuda=11",
                                     "--os", "ubuntu22.04", "--dry-run"])
    assert "libcudnn8=8.9.7.29-1+cuda11.8" in r.output, r.output


@PLAN_TEXTS
def test_every_alternative_is_a_command_envdoctor_install_accepts():
    import shlex

    from envdoctor.cli.install import install, parse_options
    from envdoctor.recipes import RECIPES

    alts = _alternatives()
    assert len(alts) > 40
    bad = []
    for comp, alt in alts:
        text = alt.split(" (", 1)[0].strip()
        words = shlex.split(text)
        if words[:2] == ["envdoctor", "install"]:
            args = words[2:]
        elif words and words[0].startswith("--"):
            args = [comp] + words
        else:
            bad.append((comp, alt, "not a command"))
            continue
        try:
            ctx = install.make_context("install", list(args))
            p = ctx.params
            assert p["component"] in RECIPES, "unknown component"
            if p["method"]:
                assert p["method"] in load_recipe(p["component"]).METHODS, "unknown method"
            if p["os_name"]:
                parse_target(p["os_name"])
            parse_options(p["extra"])
        except Exception as exc:  # noqa: BLE001
            bad.append((comp, alt, str(exc) or type(exc).__name__))
    assert not bad, "\n".join(f"{c}: {a!r}: {w}" for c, a, w in bad)


# -- the install lines findings suggest are commands `install` accepts ------------------------------------
def _snapshots() -> List[str]:
    here = os.path.dirname(__file__)
    out = []
    for base in ("machines", "corpus"):
        root = os.path.join(here, base)
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            path = os.path.join(root, name, "snapshot.json")
            if os.path.isfile(path):
                out.append(path)
    return out


def test_every_install_line_a_finding_suggests_is_accepted():
    """Replays every real machine and corpus snapshot, collects each finding's `envdoctor install ...` line and
    plans it (--dry-run) against that snapshot: never a usage error (a refusal with reasons is fine)."""
    import shlex

    from click.testing import CliRunner

    from envdoctor.cli.install import install
    from envdoctor.install import validate

    lines = set()
    for path in _snapshots():
        try:
            report = snapshot_report(path)
        except Exception:  # noqa: BLE001 - a snapshot this build cannot read is another test's business
            continue
        for fd in report.findings:
            line = getattr(getattr(fd, "fix", None), "install", None)
            if line:
                lines.add((line, path))
    assert len({ln for ln, _p in lines}) >= 5, lines
    bad = []
    for line, path in sorted(lines):
        words = shlex.split(line)
        assert words[:2] == ["envdoctor", "install"], line
        args = [os.path.expanduser(w) if w.startswith("~") else w for w in words[2:]]
        if "--prefix" in args:  # redist: reading NVIDIA's manifest needs the network; parse and check values only
            try:
                params = install.make_context("install", list(args)).params
                validate.version(params["version"])
                validate.prefix(params["prefix"])
            except Exception as exc:  # noqa: BLE001
                bad.append(f"{line}: {exc}")
            continue
        r = CliRunner().invoke(install, args + ["--snapshot", path, "--dry-run", "--format", "json"])
        usage = ("No such option", "is not a release number", "Invalid value", "Missing argument", "Got unexpected")
        # a driver branch NVIDIA's repositories carry must plan (565 was refused: "not one envdoctor knows")
        must_plan = words[2] == "driver" and "--version" in words and int(words[words.index("--version") + 1]) >= 450
        if r.exit_code not in (0, 2) or any(u in r.output for u in usage) or (
                must_plan and r.exit_code != 0 and "not a supported install target" not in r.output):
            bad.append(f"{line}  [{os.path.basename(os.path.dirname(path))}]: exit {r.exit_code}: {r.output[-300:]}")
    assert not bad, "\n".join(bad)

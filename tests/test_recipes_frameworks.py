"""Framework recipes (pytorch, tensorflow, jax) x methods (pip, conda, docker).

The machines are miniature ones (``make_host``) whose NVML answers have the shapes
envdoctor/host/nvml_worker.py writes (see tests/test_probe_driver.py, tests/test_probe_gpu.py);
the facts come from running the real probes on them.  Driver versions are real releases
(470.82.01, 535.54.03, 550.54.15, 570.124.06, 580.82.07); compute capabilities are NVIDIA's
(https://developer.nvidia.com/cuda-gpus: K80 3.7, A100 8.0, RTX 5090 12.0).

Golden plans live in tests/recipes_expected/; regenerate them with ENVDOCTOR_UPDATE_GOLDEN=1 and
review the diff against pytorch.org/get-started/locally, tensorflow.org/install/pip and
docs.jax.dev/en/latest/installation.html.
"""

from __future__ import annotations

import os
from typing import List, Optional

import pytest

from envdoctor import preflight
from envdoctor.advise import Target as AdviseTarget
from envdoctor.advise import advise
from envdoctor.facts import Facts
from envdoctor.install.plan import RunCommand, WriteFile, render_sh
from envdoctor.probes import run_probes
from tests.conftest import make_host

try:
    from envdoctor.recipes import RecipeError, Request, Target
except ImportError:  # pragma: no cover - the registry module is written in parallel
    pytest.skip("recipes/__init__.py has no Target/Request/RecipeError yet", allow_module_level=True)

from envdoctor.recipes import docker_image, load_recipe
from envdoctor.recipes.framework import release

#: the framework recipes, each the one recipe of recipes/framework.py with its plug-in's build hooks
pytorch, tensorflow, jax = (load_recipe(n) for n in ("pytorch", "tensorflow", "jax"))

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "recipes_expected")
UBUNTU2204 = Target("ubuntu", "22.04", "debian", "x86_64")
ROCKY9 = Target("rocky", "9", "rhel", "x86_64")
UBUNTU2404_ARM = Target("ubuntu", "24.04", "debian", "aarch64")
PY = "/opt/venv/bin/python"

# /etc/os-release of Ubuntu 22.04.4 LTS, verbatim.
OS_RELEASE_2204 = """PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
"""


def machine_facts(driver: str, cuda: int, ccs: List[List[int]], names: Optional[List[str]] = None) -> Facts:
    """Facts of a machine with this driver (NVML ``system.cuda_driver_version`` as an int, 12020 = 12.2)."""
    data = {"init": {"value": True}, "system.driver_version": {"value": driver},
            "system.cuda_driver_version": {"value": cuda}, "device_count": {"value": len(ccs)}}
    for i, cc in enumerate(ccs):
        data[f"device.{i}.handle"] = {"value": True}
        data[f"device.{i}.name"] = {"value": (names or ["NVIDIA GPU"] * len(ccs))[i]}
        data[f"device.{i}.compute_capability"] = {"value": cc}
    host = make_host(files={"/etc/os-release": OS_RELEASE_2204,
                            "/sys/module/nvidia/version": driver + "\n"}, nvml={"data": data})
    results = run_probes(host, only=["os", "driver", "gpu"], parallel=False)
    return Facts(f for r in results for f in r.facts)


def req(component: str, version: Optional[str] = None, method: str = "pip", **kw) -> Request:
    kw.setdefault("python", PY)
    return Request(component=component, version=version, method=method, **kw)


def test_machine_facts_are_what_the_recipes_read():
    facts = machine_facts("550.54.15", 12040, [[8, 0], [8, 0]])
    assert str(docker_image.driver_version(facts)) == "550.54.15"
    assert docker_image.compute_capabilities(facts) == ["8.0", "8.0"]


# -- the torch variant choice --------------------------------------------------------------
def test_driver_470_gets_a_cuda_11_torch_build():
    # 470.82.01 runs CUDA <= 11.4; torch 2.4's cu118 needs 520.61.05, or 450.80.02 with minor-version compat.
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    var = pytorch.choose_variant(release(pytorch.FW, "2.4"), facts)
    assert var["tag"] == "cu118"


def _installed(module, request, facts):
    """What ``install`` does with the recipe's plan: its pre-flight (the checks on the facts after the plan)
    refuses it or lets it through."""
    plan = module.plan(request, UBUNTU2204, facts)
    preflight.check(plan, facts, module=module)
    return plan


def test_driver_470_and_a_torch_without_cuda_11_is_refused_with_the_last_release_it_runs():
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    with pytest.raises(RecipeError) as err:  # the check's verdict on torch 2.8 after the plan
        _installed(pytorch, req("pytorch", "2.8"), facts)
    assert "ERROR driver.too_old_for_framework: Driver 470.82.01 supports CUDA up to 11.4, but torch 2.8+cu128 " \
           "needs CUDA 12.8" in err.value.message
    assert "525.60.13" in err.value.message
    assert "install torch 2.7 for CUDA 11.8" in err.value.message  # the check's fix names the release it runs


def test_a_recent_driver_gets_the_newest_stable_build_it_runs_without_compat():
    # 535.54.03 is CUDA 12.2: torch 2.5's cu124 (driver 550.54.14) only under minor-version compat -> cu121.
    facts = machine_facts("535.54.03", 12020, [[8, 0]])
    assert pytorch.choose_variant(release(pytorch.FW, "2.5"), facts)["tag"] == "cu121"
    facts = machine_facts("550.54.15", 12040, [[8, 0]])
    assert pytorch.choose_variant(release(pytorch.FW, "2.5"), facts)["tag"] == "cu124"


def test_rtx_5090_blackwell_gets_cu128_or_newer_only():
    facts = machine_facts("570.124.06", 12080, [[12, 0]], ["NVIDIA GeForce RTX 5090"])
    var = pytorch.choose_variant(release(pytorch.FW, "2.7"), facts)
    assert var["tag"] == "cu128"  # cu126 (stable) stops at sm_90
    with pytest.raises(RecipeError) as err:
        _installed(pytorch, req("pytorch", "2.6"), facts)
    assert "ERROR gpu.arch_not_in_build: NVIDIA GeForce RTX 5090 (sm_120, compute capability 12.0)" in err.value.message
    assert "Suggested: torch 2.11 built for CUDA 12.8 (cu128)" in err.value.message  # the check's fix


def test_k80_gets_the_last_torch_whose_cudnn_runs_on_it_and_asking_for_the_newest_is_refused_naming_it():
    facts = machine_facts("470.82.01", 11040, [[3, 7]], ["Tesla K80"])
    with pytest.raises(RecipeError) as err:  # the newest torch (CUDA 13.2, no sm_37): the checks' verdict
        _installed(pytorch, req("pytorch", pytorch.versions()[-1]), facts)
    assert "ERROR driver.too_old_for_framework: Driver 470.82.01 supports CUDA up to 11.4" in err.value.message
    assert "install torch 2.3 for CUDA 11.8" in err.value.message  # the check's fix, as advise answers
    # torch 2.4-2.7 cu118 carry sm_37 but pin cuDNN 9.1, which supports compute capability 5.0 and newer
    # (cudnn.json): the release advise answers is the newest whose cuDNN runs on a K80.
    assert advise(AdviseTarget(driver="470.82.01", cc="3.7"), ["torch"]).frameworks[0].release == "2.3"
    # No --version: the newest release this machine runs, as advise answers, saying why not a newer one.
    plan = pytorch.plan(req("pytorch"), UBUNTU2204, facts)
    assert _pip_line(plan).endswith("torch==2.3.* --index-url https://download.pytorch.org/whl/cu118")
    assert any(n.startswith("torch 2.3 is the newest release this machine runs") for n in plan.notes)
    with pytest.raises(RecipeError) as err:  # asked for by version: refused (cu118 by its cuDNN, advise's rule;
        _installed(pytorch, req("pytorch", "2.7"), facts)  # cu126 by the checks: the driver and sm_37)
    assert "ERROR gpu.arch_not_in_build: Tesla K80 (sm_37, compute capability 3.7)" in err.value.message


def test_torch_is_chosen_for_the_interpreter_pip_installs_into_as_advise_answers():
    """torch 2.15 has wheels for Python 3.11+ only (2.9-2.14: 3.10+); the pip method without --python installs
    into the interpreter the facts describe.  Before, the recipe planned torch 2.15 for a Python 3.10
    interpreter, which pip refuses ("No matching distribution"), while advise named 2.14."""
    facts = machine_facts("580.82.07", 13000, [[9, 0]], ["NVIDIA H100 80GB HBM3"])
    facts.add(type(next(iter(facts)))("python.version", "3.10.12", "python:/usr/bin/python3"))
    answer = advise(AdviseTarget(driver="580.82.07", cc="9.0", python="3.10.12"), ["torch"]).frameworks[0]
    plan = pytorch.plan(req("pytorch", python=None), UBUNTU2204, facts)
    assert (plan.version, answer.release) == ("2.14", "2.14")
    assert _pip_line(plan).endswith("torch==2.14.* --index-url https://download.pytorch.org/whl/" + answer.variant)
    assert any(n.startswith("torch 2.14 is the newest release this machine runs; torch 2.15 needs Python >=3.11,"
                            "<3.16, and the interpreter pip installs into is Python 3.10.12") for n in plan.notes)
    with pytest.raises(RecipeError) as err:  # asked for by version: refused, saying why and what fits
        pytorch.plan(req("pytorch", "2.15", python=None), UBUNTU2204, facts)
    assert "torch 2.15 has no build that runs on this machine" in err.value.message
    assert "needs Python >=3.11,<3.16, not 3.10.12" in err.value.message
    assert err.value.alternatives[0] == "envdoctor install pytorch --version 2.14 --option cuda=" + answer.cuda
    assert "--python /path/to/another/python" in err.value.alternatives and "--method conda" in err.value.alternatives
    # --python names another interpreter (checked when the plan runs), conda creates a fitting one: 2.15
    assert pytorch.plan(req("pytorch"), UBUNTU2204, facts).version == "2.15"
    assert pytorch.plan(req("pytorch", "2.15", method="conda", python=None), UBUNTU2204, facts).version == "2.15"


def test_the_torch_cpu_build_is_a_release_with_wheels_for_the_interpreter():
    facts = no_gpu_facts()
    facts.add(type(next(iter(facts)))("python.version", "3.8.10", "python:/usr/bin/python3"))
    plan = pytorch.plan(req("pytorch", python=None), UBUNTU2204, facts)  # 2.4 is the last with Python 3.8 wheels
    assert _pip_line(plan).endswith("torch==2.4.* --index-url https://download.pytorch.org/whl/cpu")
    assert any("torch 2.4 is the newest release with wheels for Python 3.8.10" in n for n in plan.notes)
    with pytest.raises(RecipeError) as err:
        pytorch.plan(req("pytorch", "2.5", python=None), UBUNTU2204, facts)
    assert "torch 2.5 supports Python >=3.9,<3.14" in err.value.message and "3.8.10" in err.value.message
    assert "envdoctor install pytorch --version 2.4 --option cuda=cpu (supports Python 3.8.10)" \
        in err.value.alternatives


def test_no_facts_plans_the_stable_default_for_another_os():
    var = pytorch.choose_variant(release(pytorch.FW, "2.7"), Facts())
    assert var["tag"] == "cu126"  # pytorch.org's default for 2.7; cu128 was "experimental"


def test_unknown_version_and_method_and_option_are_refused():
    with pytest.raises(RecipeError):
        pytorch.plan(req("pytorch", "0.4"), UBUNTU2204, Facts())
    with pytest.raises(RecipeError):
        pytorch.plan(req("pytorch", "2.4; rm -rf /"), UBUNTU2204, Facts())
    with pytest.raises(RecipeError):
        pytorch.plan(req("pytorch", "2.4", method="runfile"), UBUNTU2204, Facts())
    with pytest.raises(RecipeError):
        pytorch.plan(req("pytorch", "2.4", options={"colour": "red"}), UBUNTU2204, Facts())
    with pytest.raises(RecipeError):
        pytorch.plan(req("pytorch", "2.4", python="python3"), UBUNTU2204, Facts())


def test_pip_plan_argv_and_mirror():
    facts = machine_facts("550.54.15", 12040, [[8, 0]])
    p = pytorch.plan(req("pytorch", "2.5.1", mirror="https://mirror.example.org/whl/"), UBUNTU2204, facts)
    install = next(s for s in p.steps if s.id == "pip-install").action
    assert isinstance(install, RunCommand)
    assert install.argv == [PY, "-m", "pip", "install", "torch==2.5.1", "--index-url",
                            "https://mirror.example.org/whl/cu124"]


# -- docker -----------------------------------------------------------------------------------
def test_docker_refuses_an_image_the_driver_cannot_start_and_explains_minor_compat():
    facts = machine_facts("535.54.03", 12020, [[8, 0]])
    with pytest.raises(RecipeError) as err:
        pytorch.plan(req("pytorch", "2.7", method="docker", options={"cuda": "12.8"}), UBUNTU2204, facts)
    msg = err.value.message
    assert "nvidia/cuda:12.8.1-runtime-ubuntu24.04 needs NVIDIA driver >= 570.124.06" in msg
    assert "minor-version compatibility" in msg and "NVIDIA_REQUIRE_CUDA=cuda>=12.8" in msg
    assert "envdoctor install driver --version 570" in err.value.alternatives


def test_docker_picks_an_image_the_driver_starts():
    facts = machine_facts("535.54.03", 12020, [[8, 0]])
    p = pytorch.plan(req("pytorch", "2.5", method="docker"), UBUNTU2204, facts)
    df = p.steps[0].action
    assert isinstance(df, WriteFile)
    assert "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\n" in df.content
    assert p.steps[1].action.argv[:4] == ["docker", "build", "-t", "envdoctor/pytorch:2.5-cu121"]


def test_docker_cudnn_tags_follow_nvidias_naming():
    assert docker_image.Image("11.8.0", "runtime", True, "ubuntu22.04").tag == "11.8.0-cudnn8-runtime-ubuntu22.04"
    assert docker_image.Image("12.3.2", "devel", True, "ubuntu22.04").tag == "12.3.2-cudnn9-devel-ubuntu22.04"
    assert docker_image.Image("12.4.1", "runtime", True, "ubuntu22.04").tag == "12.4.1-cudnn-runtime-ubuntu22.04"
    assert docker_image.Image("12.6.3", "base", False, "ubuntu24.04").tag == "12.6.3-base-ubuntu24.04"
    with pytest.raises(RecipeError):
        docker_image.choose_image("12.4", {"variant": "base", "cudnn": "yes"}, None)
    with pytest.raises(RecipeError):
        docker_image.choose_image("12.4", {"image_os": "ubuntu24.04"}, None)


# -- tensorflow, jax ---------------------------------------------------------------------------
def test_tensorflow_and_cuda_from_2_14_and_system_cuda_before():
    p = tensorflow.plan(req("tensorflow", "2.17"), UBUNTU2204, Facts())
    assert p.steps[1].action.argv[-1] == "tensorflow[and-cuda]==2.17.*"
    p = tensorflow.plan(req("tensorflow", "2.13"), UBUNTU2204, Facts())
    assert p.steps[1].action.argv[-1] == "tensorflow==2.13.*"
    assert any("system CUDA 11.8 and cuDNN 8.6" in n for n in p.notes)


def test_tensorflow_refuses_an_old_driver_and_a_python_outside_its_range():
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    with pytest.raises(RecipeError) as err:
        _installed(tensorflow, req("tensorflow", "2.17"), facts)
    assert "ERROR driver.too_old_for_framework: " in err.value.message and "525.60.13" in err.value.message
    facts.add(type(next(iter(facts)))("python.version", "3.13.1", "python:/usr/bin/python3"))
    with pytest.raises(RecipeError) as err:
        tensorflow.plan(req("tensorflow", "2.13", python=None), UBUNTU2204, facts)
    assert "needs Python >=3.8,<3.12, not 3.13.1" in err.value.message
    assert "--python /path/to/another/python" in err.value.alternatives
    # no --version: the newest release with wheels for this interpreter (TensorFlow 2.21 needs Python 3.10+,
    # 2.20 still takes 3.9), as advise answers for this machine; before, the recipe refused with 2.21
    facts = machine_facts("550.54.15", 12040, [[8, 0]])
    facts.add(type(next(iter(facts)))("python.version", "3.9.18", "python:/usr/bin/python3"))
    plan = tensorflow.plan(req("tensorflow", python=None), UBUNTU2204, facts)
    assert _pip_line(plan).endswith("install tensorflow[and-cuda]==2.20.*")
    assert advise(AdviseTarget(driver="550.54.15", cc="8.0", python="3.9.18"), ["tensorflow"]).frameworks[0].release \
        == "2.20"


def test_jax_picks_the_newest_cuda_major_the_driver_runs():
    older = machine_facts("575.57.08", 12090, [[9, 0]])
    newer = machine_facts("580.82.07", 13000, [[9, 0]])
    assert jax.plan(req("jax"), UBUNTU2204, older).steps[1].action.argv[-1] == "jax[cuda12]"
    assert jax.plan(req("jax"), UBUNTU2204, newer).steps[1].action.argv[-1] == "jax[cuda13]"
    with pytest.raises(RecipeError) as err:  # min_sm 5.2
        jax.plan(req("jax"), UBUNTU2204, machine_facts("470.82.01", 11040, [[3, 7]]))
    assert "no code for compute capability 3.7" in err.value.message
    assert any("--option cuda=cpu" in a for a in err.value.alternatives)


def test_jax_on_driver_470_gets_the_last_cuda_11_wheels_as_advise_says():
    """Driver 470 runs no jax CUDA 12 plugin (525.60.13 and up); the recipe refused while advise named the
    last jax with CUDA 11 wheels (0.4.25, cuda11_pip: CUDA 11.8 under minor-version compatibility).  Those
    jaxlib wheels are on JAX's own links page, not PyPI, so the plan passes --find-links as advise does."""
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    answer = advise(AdviseTarget(driver="470.82.01", cc="8.0"), ["jax"]).frameworks[0]
    plan = jax.plan(req("jax"), UBUNTU2204, facts)
    # jax.json's rows follow JAX's own per-tag install guide: 0.4.25's row is that release alone
    assert _pip_line(plan).endswith("install jax[cuda11_pip]>=0.4.25,<0.4.26 --find-links "
                                    "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html")
    assert (answer.variant, answer.release) == ("cuda11", "<0.4.26,>=0.4.25")
    assert any("newest release this machine runs" in n for n in plan.notes)
    with pytest.raises(RecipeError) as err:  # asking for a CUDA 12 release: the check's verdict on the driver
        _installed(jax, req("jax", "0.6.2"), facts)
    assert "ERROR driver.too_old_for_framework: " in err.value.message and "jax 0.6.2" in err.value.message
    assert "525.60.13" in err.value.message


def test_force_plans_the_release_asked_for_past_the_driver_with_the_least_demanding_build():
    facts = machine_facts("470.82.01", 11040, [[8, 0]])
    plan = jax.plan(req("jax", "0.11.2", force=True), UBUNTU2204, facts)
    # jax 0.11.2 has CUDA 12 (driver 525.60.13) and CUDA 13 (580.65.06) wheels: the one nearer this driver
    assert _pip_line(plan).endswith("install jax[cuda12]==0.11.2")
    assert any(n.startswith("WARNING (--force): jax >=0.11.2 has no build that runs") for n in plan.notes)
    plan = tensorflow.plan(req("tensorflow", "2.17", force=True), UBUNTU2204, facts)
    assert _pip_line(plan).endswith("install tensorflow[and-cuda]==2.17.*")
    assert any(n.startswith("WARNING (--force)") and "525.60.13" in n for n in plan.notes)
    with pytest.raises(RecipeError):  # --force lifts the driver only: a K80 has no code in any jax wheel
        jax.plan(req("jax", "0.11.2", force=True), UBUNTU2204, machine_facts("470.82.01", 11040, [[3, 7]]))


def test_registry_loads_these_modules():
    for name in ("pytorch", "tensorflow", "jax"):
        mod = load_recipe(name)
        assert mod.COMPONENT == name and "pip" in mod.METHODS and mod.versions()
        assert mod.default_method(UBUNTU2204) == "pip"


# -- golden plans -----------------------------------------------------------------------------
GOLDEN = [
    ("pytorch-pip-ubuntu22.04-a100-550", pytorch, req("pytorch", "2.5"), UBUNTU2204, ("550.54.15", 12040, [[8, 0]])),
    ("pytorch-pip-ubuntu22.04-rtx5090", pytorch, req("pytorch", "2.7"), UBUNTU2204,
     ("570.124.06", 12080, [[12, 0]])),
    ("pytorch-conda-rocky9", pytorch, req("pytorch", "2.7", method="conda"), ROCKY9, None),
    ("pytorch-conda-forge-ubuntu22.04", pytorch, req("pytorch", "2.7", method="conda",
                                                     options={"channel": "conda-forge"}), UBUNTU2204, None),
    ("pytorch-docker-ubuntu22.04", pytorch, req("pytorch", "2.7", method="docker", prefix="/srv/build/torch"),
     UBUNTU2204, ("570.124.06", 12080, [[8, 0]])),
    ("tensorflow-pip-ubuntu22.04", tensorflow, req("tensorflow", "2.17"), UBUNTU2204, None),
    ("tensorflow-pip-2.13-rocky9", tensorflow, req("tensorflow", "2.13"), ROCKY9, None),
    ("tensorflow-conda-ubuntu22.04", tensorflow, req("tensorflow", "2.17", method="conda"), UBUNTU2204, None),
    ("tensorflow-docker-ubuntu22.04", tensorflow, req("tensorflow", "2.17", method="docker"), UBUNTU2204, None),
    ("jax-pip-ubuntu24.04-aarch64", jax, req("jax"), UBUNTU2404_ARM, None),
    ("jax-conda-ubuntu22.04", jax, req("jax", method="conda"), UBUNTU2204, None),
    ("jax-docker-ubuntu22.04", jax, req("jax", "0.6.2", method="docker", options={"cuda": "12"}), UBUNTU2204,
     ("580.82.07", 13000, [[9, 0]])),
]


@pytest.mark.parametrize("name,module,request_,target,machine", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_plan(name, module, request_, target, machine):
    facts = machine_facts(*machine) if machine else Facts()
    text = render_sh(module.plan(request_, target, facts))
    path = os.path.join(EXPECTED, name + ".sh")
    if os.environ.get("ENVDOCTOR_UPDATE_GOLDEN") == "1":
        os.makedirs(EXPECTED, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read(), f"{path} differs; review, then regenerate with ENVDOCTOR_UPDATE_GOLDEN=1"


# -- CPU builds: a machine with no NVIDIA GPU, or --option cuda=cpu ----------------------------
def no_gpu_facts() -> Facts:
    """The GPU-less Debian 12 machine captured in tests/machines (no NVIDIA PCI device, NVML absent)."""
    from tests.conftest import load_machine

    return Facts(f for r in run_probes(load_machine("debian12-nogpu")) for f in r.facts)


def _pip_line(plan) -> str:
    return " ".join(next(s.action.argv for s in plan.steps if s.id == "pip-install"))


@pytest.mark.parametrize("component,version,expect", [
    ("pytorch", "2.4", "torch==2.4.* --index-url https://download.pytorch.org/whl/cpu"),
    ("tensorflow", "2.17", "install tensorflow==2.17.*"),
    ("jax", None, "install jax"),
])
def test_a_machine_without_a_gpu_gets_the_cpu_build(component, version, expect):
    """Found comparing with the peers: `install pytorch` on a GPU-less box planned a cu121 wheel (gigabytes
    of CUDA libraries nothing can use) while advise and diagnose said to use the CPU build."""
    plan = load_recipe(component).plan(req(component, version), UBUNTU2204, no_gpu_facts())
    line = _pip_line(plan)
    assert line.endswith(expect) and "cu1" not in line and "and-cuda" not in line and "cuda" not in line.split()[-1]
    assert "CPU" in plan.title and any("no NVIDIA GPU" in n for n in plan.notes)


def test_cpu_on_request_and_cuda_on_request():
    gpu = machine_facts("550.54.15", 12040, [[8, 0]])
    plan = pytorch.plan(req("pytorch", "2.4", options={"cuda": "cpu"}), UBUNTU2204, gpu)
    assert _pip_line(plan).endswith("/whl/cpu")
    plan = pytorch.plan(req("pytorch", "2.4", options={"cuda": "12.1"}), UBUNTU2204, no_gpu_facts())
    assert _pip_line(plan).endswith("/whl/cu121")
    with pytest.raises(RecipeError, match="builds a CUDA image"):
        pytorch.plan(req("pytorch", "2.4", method="docker", options={"cuda": "cpu"}), UBUNTU2204, gpu)
    with pytest.raises(RecipeError, match="built with CUDA 12.3 only"):
        tensorflow.plan(req("tensorflow", "2.17", options={"cuda": "11.8"}), UBUNTU2204, gpu)


def test_planning_for_another_machine_keeps_the_cuda_build():
    """--os with no snapshot: nothing is known about that machine's GPU, so no CPU guess."""
    plan = pytorch.plan(req("pytorch", "2.4"), UBUNTU2204, Facts())
    assert "/whl/cu" in _pip_line(plan) and "/whl/cpu" not in _pip_line(plan)


@pytest.mark.parametrize("machine", ["ubuntu2204-hostile-broken", "ubuntu2404-open-module-no-nvml",
                                     "ubuntu2404-driver-mismatch", "centos7-a100-cuda115", "conda-ubuntu2204-h100",
                                     "ubuntu2004-rtx3060-cuda118", "rocky8-4xa100-conda"])
def test_install_and_advise_choose_the_same_torch_build(machine):
    """Found by the second audit: with NVML unable to answer (hung, no user-space driver, a driver/library
    mismatch) the recipes saw no driver and planned cu132, which those drivers cannot run, while advise read
    the kernel module's version and said cu126. Both now read the driver the same way."""
    from envdoctor.advise import advise, target_from_facts
    from tests.conftest import load_machine

    facts = Facts(f for r in run_probes(load_machine(machine)) for f in r.facts)
    target = target_from_facts(facts)
    torch = advise(target.merged(python="3.11"), ["torch"]).frameworks[0]  # the plans' --python is a 3.11 venv
    plan = pytorch.plan(req("pytorch"), UBUNTU2204, facts)  # no --version: the newest that runs, as advise
    line = " ".join(next(s.action.argv for s in plan.steps if s.id == "pip-install"))
    assert torch.variant and line.endswith("torch==%s.* --index-url https://download.pytorch.org/whl/%s" % (
        torch.release, torch.variant)), (line, torch.release, torch.variant)


def test_an_old_release_for_a_new_gpu_names_the_nearest_releases_once():
    """torch 1.12 on an H100 (sm_90): the refusal names the first newer release with sm_90 and the last older
    one, once each (it used to repeat "the first release with sm_90 is torch X" for every newer release and
    offer 17 lines), and offers those plus the newest release that runs here."""
    facts = machine_facts("580.95.05", 13000, [[9, 0]], ["NVIDIA H100 80GB HBM3"])
    with pytest.raises(RecipeError) as err:  # the arch check's verdict after the plan, with its one suggestion
        _installed(pytorch, req("pytorch", "1.12", method="conda"), facts)
    msg = err.value.message
    assert "ERROR gpu.arch_not_in_build: NVIDIA H100 80GB HBM3 (sm_90, compute capability 9.0)" in msg
    assert msg.count("Suggested:") == 1


def test_pip_torch_reinstalls_the_companions_installed_beside_it() -> None:
    """Corpus case torch1131-cu117-h100-sm90-not-compatible has torch 1.13.1+cu117 with torchvision 0.14.1+cu117:
    ``install pytorch`` of a CUDA 12 build reinstalls torchvision from the same index in the same pip run (PyTorch's
    own install line), so the pre-flight's diagnose after the plan finds no torchvision built for another CUDA; the
    machine's facts without torchvision install torch alone."""
    from envdoctor.host.snapshot import SnapshotHost
    from envdoctor.recipes import Request, parse_target
    from tests.conftest import corpus_snapshot, probe_facts

    facts = probe_facts(SnapshotHost(corpus_snapshot("torch1131-cu117-h100-sm90-not-compatible")))
    recipe = load_recipe("pytorch")
    plan = recipe.plan(Request("pytorch", "2.6", "pip"), parse_target("ubuntu22.04"), facts)
    pip = [s for s in plan.steps if s.id == "pip-install"][0]
    assert "torchvision" in render_sh(plan) and "torchvision" in pip.title
    torch_cuda = plan.provides["framework.torch"]["cuda"]
    assert plan.provides["framework.torchvision"] == {  # as the frameworks probe reports it; pip picks the release
        "package": "torchvision", "version": None, "public": None, "local": "cu" + torch_cuda.replace(".", ""),
        "cuda": torch_cuda, "build": "cuda"}
    assert "framework.torchvision.gpu_code" not in plan.provides
    assert any("torchvision, installed beside torch, is reinstalled" in n for n in plan.notes)
    alone = Facts([f for f in facts if not f.key.startswith("framework.torchvision")])
    plan = recipe.plan(Request("pytorch", "2.6", "pip"), parse_target("ubuntu22.04"), alone)
    assert "torchvision" not in render_sh(plan) and "framework.torchvision" not in plan.provides

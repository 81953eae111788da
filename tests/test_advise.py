"""``envdoctor advise``: answers for real driver/GPU combinations, checked against the vendors' tables.

Tables the expectations come from (the matrix rows cite the same pages):
* NVIDIA CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions"
  (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html#id5): CUDA 11.4 GA needs
  >= 470.42.01, 11.5 needs >= 495.29.05; 12.2 needs >= 535.54.03, 12.3 >= 545.23.06; 12.4 >= 550.54.14,
  12.5 >= 555.42.02; 12.8 >= 570.26, 12.9 >= 575.51.03; 13.0 >= 580.65.06.
* CUDA minor-version compatibility (https://docs.nvidia.com/deploy/cuda-compatibility/): 11.x needs
  >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580.65.06.
* PyTorch RELEASE.md "Release Compatibility Matrix" and https://pytorch.org/get-started/previous-versions/:
  2.7 is the last release with a CUDA 11.8 variant (cu118, which still carries sm_37); 2.4 is the last
  release for Python 3.8; Blackwell (sm_120) is only in the cu128+ wheels.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from envdoctor.advise import AdviseError, Target, advise, gpu_cc, parse_cc, parse_driver, target_from_facts
from envdoctor.cli import cli
from envdoctor.cli.advise import advise as advise_cmd
from tests.conftest import load_machine, probe_facts


def answer(driver, cc, python="3.11", **kw):
    return advise(Target(driver=driver, cc=cc, python=python, **kw))


def test_kepler_k80_driver_470_newest_cuda_11_4_and_last_sm37_torch():
    a = answer("470.82.01", "3.7")  # Tesla K80 on the R470 branch (its last driver branch)
    assert a.cuda.newest_native == "11.4"            # Table 3: 470.42.01 <= 470.82.01 < 495.29.05 (11.5)
    assert a.cuda.newest_minor_compat == "11.8"      # 11.x minor-version compatibility from 450.80.02
    assert a.cuda.gpu_range == ("8.0", "11.8")       # CUDA 12.0 dropped Kepler (cc_min 5.0)
    assert any("CUDA 12.0 drops it" in n for n in a.cuda.notes)
    torch = a.framework("torch")
    # cu118 is the last variant with sm_37 (RELEASE.md), but from 2.4 its wheels pull cuDNN 9.1.0.70 from
    # pip, and cuDNN 9 supports compute capability 5.0 and newer (cudnn.json 9.0.0): 2.3 (cuDNN 8) is the
    # newest torch whose whole stack runs on a K80
    assert (torch.release, torch.variant) == ("2.3", "cu118")
    assert torch.command == 'pip install "torch==2.3.*" --index-url https://download.pytorch.org/whl/cu118'
    assert torch.native is False and "minor-version compatibility" in " ".join(torch.notes)
    newer = {(p["release"], p["variant"]): p for p in torch.passed_over}
    assert any("cuDNN 9.1.0.70" in r and "not 3.7" in r for r in newer[("2.7", "cu118")]["reasons"])
    assert a.framework("jax").command is None        # jax wheels need sm_52+


def test_kepler_with_python_38_still_gets_torch_23():
    torch = answer("470.82.01", "3.7", python="3.8").framework("torch")
    assert (torch.release, torch.variant) == ("2.3", "cu118")   # 2.5 needs Python >= 3.9 (and cuDNN 9)
    assert any("needs Python >=3.9" in r for p in torch.passed_over if p["release"] == "2.5"
               for r in p["reasons"])


def test_pascal_gtx1080_driver_535():
    name, cc = gpu_cc("GTX 1080")
    assert (name, cc) == ("GeForce GTX 1080", "6.1")
    a = answer("535.104.05", cc)
    assert a.cuda.newest_native == "12.2"            # 535.54.03 <= 535.104.05 < 545.23.06
    assert a.cuda.newest_minor_compat == "12.9"      # 12.x floor 525.60.13; 13.x needs 580.65.06
    torch = a.framework("torch")
    # sm_61 runs the sm_60 SASS of the cu126 wheels; cu130/cu132 dropped Pascal and need driver 580+
    assert torch.variant == "cu126" and torch.native is False
    reasons = " ".join(r for p in torch.passed_over for r in p["reasons"])
    assert "580.65.06" in reasons and "compute capability 6.1" in reasons


@pytest.mark.parametrize("gpu", ["RTX 3090", "A100 SXM4 80GB"])
def test_ampere_driver_550(gpu):
    _, cc = gpu_cc(gpu)
    a = answer("550.54.15", cc)
    assert a.cuda.newest_native == "12.4"            # 550.54.14 <= 550.54.15 < 555.42.02
    torch = a.framework("torch")
    assert torch.variant == "cu126" and torch.release == "2.14"
    assert torch.native is False                     # 12.6 needs 560.28.03 natively


def test_hopper_h100_driver_570_runs_cu126_natively():
    a = answer("570.86.15", "9.0")
    assert a.cuda.newest_native == "12.8"            # 570.26 <= 570.86.15 < 575.51.03
    torch = a.framework("torch")
    assert (torch.variant, torch.native) == ("cu126", True)
    assert torch.command.endswith("https://download.pytorch.org/whl/cu126")


def test_blackwell_rtx5090_driver_575_needs_cu128():
    _, cc = gpu_cc("RTX 5090")
    assert cc == "12.0"
    a = answer("575.57.08", cc)
    assert a.cuda.newest_native == "12.9" and a.cuda.newest_minor_compat == "12.9"
    torch = a.framework("torch")
    assert torch.variant == "cu128"                  # cu126 has no sm_120; cu130+ needs 580.65.06
    over = {(p["release"], p["variant"]): p["reasons"] for p in torch.passed_over}
    assert any("compute capability 12.0" in r for r in over[("2.14", "cu126")])
    assert any("580.65.06" in r for r in over[("2.14", "cu130")])


def test_blackwell_driver_580_gets_cu130_natively():
    # torch 2.15's only build in the matrix is its PyPI one (cu132, CUDA 13.2 needs 595.45.04): it runs on
    # 580 only through minor-version compatibility, and the answer says so with its limits
    torch = answer("580.82.07", "12.0").framework("torch")
    assert (torch.release, torch.variant, torch.native) == ("2.15", "cu132", False)
    assert any("minor-version compatibility" in n and "PTX JIT" in n for n in torch.notes)
    # within 2.14, cu130 runs natively and is preferred over its cu132
    older = advise(Target(driver="580.82.07", cc="12.0", python="3.12"), ["torch"])
    assert older.framework("torch").release == "2.15"
    from envdoctor.advise import choose, torch_candidates
    only_214 = [c for c in torch_candidates() if c.release == "2.14"]
    t = Target(driver="580.82.07", cc="12.0", python="3.12")
    pick = choose("torch", only_214, t)
    assert (pick.variant, pick.native) == ("cu130", True)
    assert any(p["variant"] == "cu132" and p["kind"] == "preferred_other" for p in pick.passed_over)


def test_unknown_driver_and_gpu_give_notes_not_guesses():
    a = advise(Target())
    assert a.cuda.newest_native is None
    assert any("driver version is unknown" in n for n in a.cuda.notes)
    assert any("driver unknown" in n for n in a.framework("torch").notes)


def test_bad_values_are_rejected():
    with pytest.raises(AdviseError):
        parse_driver("latest")
    with pytest.raises(AdviseError):
        parse_cc("eight")
    with pytest.raises(AdviseError):
        gpu_cc("Voodoo 5")
    assert parse_cc("sm_86") == "8.6"


def test_target_from_captured_machine():
    facts = probe_facts(load_machine("ubuntu2204-a100-mig"))
    t = target_from_facts(facts)
    assert t.driver == facts.value("driver.version") and t.cc == "8.0"
    assert t.python == facts.value("python.version")


def test_cli_explicit_values_text_and_json():
    runner = CliRunner()
    r = runner.invoke(advise_cmd, ["--driver", "470.82.01", "--cc", "3.7", "--python-version", "3.10"],
                      catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "Newest CUDA: 11.4 (11.8 with minor-version compatibility)" in r.output
    assert "https://download.pytorch.org/whl/cu118" in r.output
    r = runner.invoke(advise_cmd, ["--driver", "575.57.08", "--gpu", "RTX 5090", "--format", "json",
                                   "--framework", "torch"], catch_exceptions=False)
    doc = json.loads(r.output)
    assert doc["target"]["compute_capability"] == "12.0" and doc["target"]["origin"]["driver"] == "--driver"
    assert [f["variant"] for f in doc["frameworks"]] == ["cu128"]
    assert doc["frameworks"][0]["source"]["url"].startswith("https://")


def test_cli_snapshot_and_override():
    from tests.conftest import machine_path

    r = CliRunner().invoke(advise_cmd, ["--snapshot", machine_path("ubuntu2204-a100-mig"), "--driver",
                                        "580.82.07", "--format", "json"], catch_exceptions=False)
    doc = json.loads(r.output)
    assert doc["target"]["driver"] == "580.82.07" and doc["target"]["compute_capability"] == "8.0"
    assert doc["cuda"]["newest_native"] == "13.0"


@pytest.mark.parametrize("args", [["--driver", "x"], ["--gpu", "Voodoo 5", "--driver", "550.54.15"],
                                  ["--os", "windows!"], ["--snapshot", "/nonexistent.json"]])
def test_cli_bad_input_exits_2(args):
    r = CliRunner().invoke(advise_cmd, args)
    assert r.exit_code == 2, r.output


def test_a_machine_without_an_nvidia_gpu_is_told_to_use_the_cpu_builds():
    # The debian12-nogpu machine: no driver, NVML library absent, no NVIDIA device on the PCI bus.
    from click.testing import CliRunner

    from envdoctor.cli.advise import advise as advise_cmd

    from .conftest import machine_path

    res = CliRunner().invoke(advise_cmd, ["--snapshot", machine_path("debian12-nogpu")])
    assert res.exit_code == 0, res.output
    assert "No NVIDIA GPU on this machine" in res.output
    assert "pip --python /usr/bin/python3 install torch --index-url" in res.output
    assert "https://download.pytorch.org/whl/cpu" in res.output
    assert "cu1" not in res.output  # no CUDA wheel is suggested
    doc = json.loads(CliRunner().invoke(advise_cmd, ["--snapshot", machine_path("debian12-nogpu"),
                                                     "--format", "json"]).output)
    assert {b["framework"] for b in doc["cpu_builds"]} >= {"torch", "tensorflow", "jax"}
    # ...but asking about a GPU explicitly still plans for that GPU.
    res = CliRunner().invoke(advise_cmd, ["--snapshot", machine_path("debian12-nogpu"), "--driver", "550.54.15",
                                          "--cc", "8.6"])
    assert "No NVIDIA GPU" not in res.output and "download.pytorch.org/whl/cu" in res.output


def test_passed_over_folds_into_one_line_per_framework_and_reason():
    """An old K80 box: dozens of newer builds fail for the same three reasons (Python, the GPU's
    architecture, the driver). Each framework gets at most one line per reason, whatever part of a build
    lacks the GPU's code (its wheels, the CUDA it is built with), but the cuDNN pip brings is a line of its own
    (issue 20: builds with the GPU's code passed over for their cuDNN must show), and releases are named as
    releases (JAX's table rows are ranges)."""
    from envdoctor.cli import cli

    r = CliRunner().invoke(cli, ["advise", "--driver", "470.82.01", "--gpu", "Tesla K80", "--os", "ubuntu20.04",
                                 "--python-version", "3.8"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    section = r.output.split("Passed over", 1)[1].splitlines()[1:]
    lines: list = []
    for x in section:  # each folded line with its wrapped continuation
        if x.startswith("    ") and lines:
            lines[-1] += " " + x.strip()
        elif x.startswith("  "):
            lines.append(x.strip())
    kinds = {}
    for line in lines:
        fw = line.split()[0]
        kind = ("python" if "Python" in line else "cudnn" if "cuDNN" in line else
                "arch" if "compute capability" in line else
                "driver" if "driver" in line else line)
        kinds.setdefault((fw, kind), []).append(line)
        assert ">=" not in line and "<" not in line, line
    assert all(len(v) == 1 for v in kinds.values()), [v for v in kinds.values() if len(v) > 1]
    assert ("torch", "arch") in kinds and "have no code for compute capability 3.7" in kinds[("torch", "arch")][0]
    assert len(lines) <= 4 * 6


def test_k80_on_470_never_contradicts_the_chosen_build_and_names_the_cudnn():
    """issue 20: "recommends torch 2.3 and on the same screen says 'torch 2.15 to 2.3: have no code for compute
    capability 3.7'"; torch 2.4 cu118 has sm_37 and is passed over for the cuDNN pip brings, which the folded line
    hid; -v listed four releases, not every build, on lines of up to 672 characters."""
    import json as _json

    args = ["advise", "--driver", "470.82.01", "--gpu", "Tesla K80", "--framework", "torch"]
    out = CliRunner().invoke(cli, args).output
    chosen = re.search(r"^torch +(\S+) \((\S+), ", out, re.M)
    assert chosen, out
    release, variant = chosen.groups()
    passed = out[out.index("Passed over"):]
    folded = " ".join(passed.split())
    # No span of releases ends (or starts) at the chosen one; its other builds are named by build.
    assert not re.search(r"to %s \(" % re.escape(release), folded) and "to %s and" not in folded
    assert "%s's " % release in folded and variant not in folded.split("%s's " % release)[1].split(" (")[0]
    # The cuDNN is named: the builds that have the GPU's code but pull a cuDNN without it.
    assert re.search(r"torch [\d.]+ to 2\.4 \(\d+ builds\): pull cuDNN 9\.\d[\d.]* from pip, which supports "
                     r"compute capability 5\.0 and newer, not 3\.7", folded), folded
    # -v: every build passed over, one line each, and no line wider than the screen (a URL stays whole).
    doc = _json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).output)
    builds = doc["frameworks"][0]["passed_over"]
    verbose = CliRunner().invoke(cli, args + ["-v"]).output
    listed = re.findall(r"^    (\S+) (cu\d+|cpu|rocm\S*): ", verbose, re.M)
    assert len(listed) == len(builds) and len(builds) > 30
    for ln in verbose.splitlines():
        assert len(ln) <= 80 or len(ln.split()) == 1, ln


def test_advise_details_wrap_to_any_width():
    from envdoctor import advise as logic
    from envdoctor.cli.advise import render_details

    target = logic.Target().merged(driver=logic.parse_driver("470.82.01"), cc="3.7", gpu="Tesla K80")
    for width in (60, 100):
        text = render_details(logic.advise(target, ["torch", "tensorflow"]), width)
        assert all(len(ln) <= width or len(ln.split()) == 1 for ln in text.splitlines())

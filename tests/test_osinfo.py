"""One home for OS knowledge (envdoctor/osinfo.py): one family table keyed by distro's normalised ids,
one --os grammar that advise and install share.

Oracle Linux's os-release says ``ID="ol"``; distro normalises it to ``oracle``. Three tables used to say
``ol``, so the family was "other" and the unsupported-OS check never fired there.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor import osinfo
from envdoctor.checks import CheckContext, run_checks
from envdoctor.cli import cli
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes import system as sysprobe
from envdoctor.recipes import RecipeError, parse_target

from .conftest import make_host

#: /etc/os-release as Oracle Linux Server 7.9 ships it (oraclelinux-release-el7; the same text is in many
#: published `cat /etc/os-release` transcripts of 7.9 machines).
ORACLE_LINUX_79 = """NAME="Oracle Linux Server"
VERSION="7.9"
ID="ol"
ID_LIKE="fedora"
VARIANT="Server"
VARIANT_ID="server"
VERSION_ID="7.9"
PRETTY_NAME="Oracle Linux Server 7.9"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:oracle:linux:7:9:server"
HOME_URL="https://linux.oracle.com/"
BUG_REPORT_URL="https://github.com/oracle/oracle-linux"

ORACLE_BUGZILLA_PRODUCT="Oracle Linux 7"
ORACLE_BUGZILLA_PRODUCT_VERSION=7.9
ORACLE_SUPPORT_PRODUCT="Oracle Linux"
ORACLE_SUPPORT_PRODUCT_VERSION=7.9
"""


def _oracle_facts():
    host = make_host(files={"/etc/os-release": ORACLE_LINUX_79})
    return {f.key: f for f in sysprobe.probe_os(ProbeContext(host))}


def test_oracle_linux_is_read_as_distro_names_it_and_is_rhel_family():
    facts = _oracle_facts()
    assert facts["os.id"].value == "oracle" and facts["os.version"].value == "7.9"
    assert facts["os.family"].value == "rhel"


def test_the_unsupported_os_check_fires_on_oracle_linux():
    """A CUDA release NVIDIA builds for RHEL 8 and newer only (cuda.json distributions) on Oracle Linux 7.9."""
    from envdoctor.matrix import hardware as hw

    row = next(r for r in hw.cuda_releases() if "7" not in (r.get("distributions") or {}).get("rhel", ["7"]))
    facts = list(_oracle_facts().values())
    nvcc = ok("cuda.nvcc", {"path": "/usr/local/cuda/bin/nvcc", "resolved": "/usr/local/cuda/bin/nvcc",
                            "release": row["version"], "version": row["ga"], "toolkit": "/usr/local/cuda"},
              "command:/usr/local/cuda/bin/nvcc --version")
    found = [f for f in run_checks(CheckContext(Facts(facts + [nvcc]), [])) if f.code == "os.unsupported_by_cuda"]
    assert len(found) == 1 and "oracle 7.9" in found[0].title and "rhel " in found[0].title


@pytest.mark.parametrize("text,expected", [
    ("ubuntu22.04", ("ubuntu", "22.04", None)), ("ubuntu-22.04", ("ubuntu", "22.04", None)),
    ("Ubuntu 24.04", ("ubuntu", "24.04", None)), ("rhel9", ("rhel", "9", None)),
    ("rocky8-aarch64", ("rocky", "8", "aarch64")), ("ubuntu-22.04-arm64", ("ubuntu", "22.04", "aarch64")),
    ("ol9", ("oracle", "9", None)), ("oracle-8", ("oracle", "8", None)), ("redhat9", ("rhel", "9", None)),
])
def test_one_os_grammar(text, expected):
    assert tuple(osinfo.parse_os(text)) == expected


@pytest.mark.parametrize("text", ["", "ubuntu", "22.04", "ubuntu22.04-sparc", "ubuntu;rm -rf /", "../etc9"])
def test_what_is_not_a_system_is_refused(text):
    with pytest.raises(osinfo.OsSpecError):
        osinfo.parse_os(text)


def test_advise_and_install_accept_the_same_spellings():
    for spelling in ("ubuntu22.04", "ubuntu-22.04", "ubuntu_22.04"):
        assert parse_target(spelling).label == "ubuntu22.04"
        r = CliRunner().invoke(cli, ["advise", "--driver", "550.54.15", "--cc", "9.0", "--os", spelling,
                                     "--format", "json"])
        assert r.exit_code == 0, r.output
        assert '"os_id": "ubuntu"' in r.output and '"os_version": "22.04"' in r.output
        plan = CliRunner().invoke(cli, ["install", "cuda", "--version", "12.4", "--os", spelling, "--dry-run"])
        assert plan.exit_code == 0 and "ubuntu2204" in plan.output, plan.output
    with pytest.raises(RecipeError):
        parse_target("ol9")  # a known system, but no install target
    for cmd in (["advise", "--driver", "550.54.15", "--cc", "9.0"], ["install", "cuda", "--dry-run"]):
        bad = CliRunner().invoke(cli, cmd + ["--os", "ubuntu"])
        assert bad.exit_code == 2 and "not a distribution and version" in bad.output, bad.output


def test_family_follows_id_like_for_a_derivative():
    assert osinfo.family("neon", "ubuntu debian") == "debian"
    assert osinfo.family("ol") == osinfo.family("oracle") == "rhel"
    assert osinfo.family("plan9") == "other"
    assert osinfo.nvidia_distro("ol", "8.9") == ("rhel", "8") and osinfo.nvidia_distro("ubuntu", "22.04") == (
        "ubuntu", "22.04")

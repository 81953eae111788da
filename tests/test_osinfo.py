"""One home for OS knowledge (envdoctor/osinfo.py): one family table keyed by distro's normalised ids,
one --os grammar that advise and install share.

Oracle Linux's os-release says ``ID="ol"``; distro normalises it to ``oracle``. Three tables used to say
``ol``, so the family was "other" and the unsupported-OS check never fired there.
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- release files read in memory: distro's answers, no file written --------------------------------------

def _distro_on_disk(files, root):
    """distro itself, reading the same release files from a directory (how its own tests feed it)."""
    import distro

    for path, text in files.items():
        dest = os.path.join(str(root), path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as fh:
            fh.write(text)
    d = distro.LinuxDistribution(root_dir=str(root), include_lsb=False, include_uname=False, include_oslevel=False)
    return (d.id(), d.name(), d.name(pretty=True), d.version(), d.version(best=True), d.codename(), d.like())


def _in_memory(files):
    i = osinfo.release_info({p: t.encode() for p, t in files.items()})
    return (i.id, i.name, i.pretty, i.version, i.version_full, i.codename, i.like)


def _snapshot_hosts():
    from envdoctor.host.snapshot import SnapshotHost, load_snapshot

    here = os.path.dirname(os.path.abspath(__file__))
    for group in ("machines", "corpus", "live"):
        base = os.path.join(here, group)
        for name in sorted(os.listdir(base)):
            for fname in ("snapshot.json", "snapshot.json.gz"):
                path = os.path.join(base, name, fname)
                if os.path.isfile(path):
                    yield "%s/%s" % (group, name), lambda p=path, n=name: SnapshotHost(load_snapshot(p), n)


@pytest.mark.parametrize("name,load", list(_snapshot_hosts()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_captured_machine_reads_as_distro_reads_its_files(name, load, tmp_path):
    """The release files of every captured machine (fixtures, corpus cases, live captures), answered in
    memory, give what distro gives reading them from disk."""
    files, _cut = sysprobe.release_files(load())
    texts = {p: osinfo.shell_lines(d.decode("utf-8", "replace"))[0] if p.endswith(("os-release", "lsb-release"))
             else d.decode("utf-8", "replace") for p, d in files.items() if d is not None}
    assert _in_memory(texts) == _distro_on_disk(texts, tmp_path)


#: Release files as the distributions ship them (each from the distribution's release package; the same
#: texts appear in many published `cat /etc/*-release` transcripts).
SHIPPED = {
    "centos7": {"/etc/os-release": 'NAME="CentOS Linux"\nVERSION="7 (Core)"\nID="centos"\nID_LIKE="rhel fedora"\n'
                                   'VERSION_ID="7"\nPRETTY_NAME="CentOS Linux 7 (Core)"\n',
                "/etc/centos-release": "CentOS Linux release 7.9.2009 (Core)\n",
                "/etc/redhat-release": "CentOS Linux release 7.9.2009 (Core)\n",
                "/etc/system-release": "CentOS Linux release 7.9.2009 (Core)\n"},
    "centos6": {"/etc/centos-release": "CentOS release 6.10 (Final)\n",
                "/etc/redhat-release": "CentOS release 6.10 (Final)\n"},
    "debian12": {"/usr/lib/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n'
                                        'VERSION_ID="12"\nVERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\n'
                                        'ID=debian\n', "/etc/debian_version": "12.7\n"},
    "ubuntu1804": {"/etc/os-release": 'NAME="Ubuntu"\nVERSION="18.04.6 LTS (Bionic Beaver)"\nID=ubuntu\n'
                                      'ID_LIKE=debian\nPRETTY_NAME="Ubuntu 18.04.6 LTS"\nVERSION_ID="18.04"\n'
                                      'UBUNTU_CODENAME=bionic\n',
                   "/etc/lsb-release": "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=18.04\nDISTRIB_CODENAME=bionic\n",
                   "/etc/debian_version": "buster/sid\n"},
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_release_files_read_as_distro_reads_them(name, tmp_path):
    assert _in_memory(SHIPPED[name]) == _distro_on_disk(SHIPPED[name], tmp_path)


def test_centos6_without_os_release_is_identified_from_its_release_file():
    info = osinfo.release_info({p: t.encode() for p, t in SHIPPED["centos6"].items()})
    assert (info.id, info.version, info.family) == ("centos", "6.10", "rhel")


def test_nothing_of_the_machine_envdoctor_runs_on_leaks_into_another_machines_answer():
    """With no release files given, the answer is empty, whatever this machine's own /etc says."""
    info = osinfo.release_info({})
    assert (info.id, info.version, info.name, info.family) == ("", "", "", "other")


def test_every_release_file_distro_reads_is_answered_from_memory():
    """distro reads its sources through a few members; each that opens or lists files must be answered by
    ReleaseFiles, else a newer distro would read this machine's files (or none) while replaying another's.
    This fails when a distro release adds a file reader: answer it in ReleaseFiles."""
    import inspect

    import distro

    readers = set()
    for name, member in vars(distro.LinuxDistribution).items():
        func = getattr(member, "func", None) or getattr(member, "fget", None) or member
        if not callable(func) or name == "__init__":
            continue
        try:
            src = inspect.getsource(func)
        except (OSError, TypeError):
            continue
        if "open(" in src or "os.listdir" in src or "os.path.isfile" in src:
            readers.add(name)
    # _parse_distro_release_file opens a path: only distro's own _distro_release_info calls it.
    missing = readers - set(vars(osinfo.ReleaseFiles)) - {"_parse_distro_release_file"}
    assert not missing, "distro reads files in %s: answer them in osinfo.ReleaseFiles" % sorted(missing)


_KEYS = st.sampled_from(["ID", "ID_LIKE", "NAME", "PRETTY_NAME", "VERSION", "VERSION_ID", "VERSION_CODENAME",
                         "UBUNTU_CODENAME", "BUILD_ID", "VARIANT_ID"])
_VALUES = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=24)

@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(_KEYS, _VALUES, st.sampled_from(['"', "'", ""])), max_size=8),
       debian_version=st.one_of(st.none(), _VALUES))
def test_any_os_release_reads_as_distro_reads_it(pairs, debian_version, tmp_path_factory):
    lines = []
    for key, value, quote in pairs:
        if quote == '"':
            value = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
        elif quote == "'":
            value = value.replace("'", "")
        else:
            value = "".join(c for c in value if c.isalnum() or c in "._-")
        lines.append("%s=%s%s%s" % (key, quote, value, quote))
    files = {"/etc/os-release": "\n".join(lines) + "\n"}
    if debian_version is not None:
        files["/etc/debian_version"] = debian_version.replace("\n", " ") + "\n"
    texts = {p: osinfo.shell_lines(t)[0] if p.endswith("os-release") else t for p, t in files.items()}
    assert _in_memory(texts) == _distro_on_disk(texts, tmp_path_factory.mktemp("root"))


def test_advise_and_install_know_the_same_systems_and_refuse_the_rest_alike():
    """issue 20: `advise --os windows11` and `--os ubuntu26.04` were accepted while `install --os` refused them.
    One grammar, one list (osinfo.SYSTEMS), the same words for what is not on it."""
    import click

    for text in ("windows11", "ubuntu26.04", "bogus9"):
        said = []
        for cmd in (["advise", "--driver", "550.54.15", "--cc", "9.0"], ["install", "cuda", "--version", "12.4",
                                                                         "--dry-run"]):
            r = CliRunner().invoke(cli, cmd + ["--os", text])
            assert r.exit_code == 2, r.output
            said.append(r.output)
        assert said[0] == said[1] and "not a system envdoctor plans for" in said[0] and "ubuntu24.04" in said[0]
    for text in osinfo.SYSTEMS:
        assert osinfo.system(text).os_id + osinfo.system(text).version == text
        assert CliRunner().invoke(cli, ["advise", "--driver", "550.54.15", "--cc", "9.0", "--os", text]).exit_code == 0
    ctx = click.Context(cli)
    helps = {name: next(p.help for p in cli.get_command(ctx, name).params if "--os" in getattr(p, "opts", ()))
             for name in ("advise", "install")}
    assert helps["advise"] == helps["install"] and "almalinux9" in helps["advise"]


def test_the_loader_directories_are_every_family_s_glibc_directories_and_the_driver_s_their_usr_half() -> None:
    from envdoctor.osinfo import DRIVER_DIRS, FAMILY_DIRS, LOADER_DIRS, MULTIARCH

    every = {d for dirs in FAMILY_DIRS.values() for triplet in MULTIARCH.values() for d in dirs(triplet)}
    assert set(LOADER_DIRS) == every and len(LOADER_DIRS) == len(every)
    assert set(DRIVER_DIRS) == {"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}


@settings(max_examples=400)
@given(st.text(alphabet="ab =#\"'\\\t", max_size=24))
def test_a_release_line_is_kept_exactly_when_shell_words_split_it(line):
    """shell_lines skips splitting the lines that cannot fail to split (quotes of one kind, paired; no
    backslash): whatever the line, it keeps it exactly when shlex would split it."""
    import shlex

    try:
        shlex.split(line, comments=True)
        splits = True
    except ValueError:
        splits = False
    kept, bad = osinfo.shell_lines(line)
    assert (bad == []) == splits, line

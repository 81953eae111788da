"""Host compilers: versions from real `--version` banners, versioned gcc, RHEL toolsets, nvcc's host compiler."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.probes import run_probes
from envdoctor.probes.compilers import parse_clang_version, parse_gcc_version

from .conftest import make_host

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FSF = ("This is free software; see the source for copying conditions.  There is NO\n"
       "warranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.\n")

# This machine (Debian 12): `gcc --version`, `g++ --version`.
GCC_DEBIAN12 = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n" + FSF
GXX_DEBIAN12 = "g++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n" + FSF
# Ubuntu 22.04.5's gcc and clang banners, as listed in a public benchmark README (GitHub code search
# "Ubuntu clang version 14.0.0-1ubuntu1.1"); the clang lines after the first are clang's usual layout.
GCC_UBUNTU2204 = ("gcc (Ubuntu 11.4.0-1ubuntu1~22.04.3) 11.4.0\nCopyright (C) 2021 Free Software Foundation, Inc.\n"
                  + FSF)
CLANG_UBUNTU2204 = ("Ubuntu clang version 14.0.0-1ubuntu1.1\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n"
                    "InstalledDir: /usr/bin\n")
# RHEL 9 / AlmaLinux 9 `gcc --version` (a public build-setup note; the same banner is in AlmaLinux 9's
# /proc/version "gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)").
GCC_RHEL9 = "gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)\nCopyright (C) 2021 Free Software Foundation, Inc.\n" + FSF


def compiler_facts(host) -> Facts:
    results = run_probes(host, only=["compilers"], parallel=False)
    assert results[0].status == "ok", results[0].error
    return Facts(results[0].facts)


def test_debian12_gcc_gxx_and_versioned_binaries():
    host = make_host(files={"/usr/bin/gcc": "", "/usr/bin/g++": "", "/usr/bin/gcc-12": "", "/usr/bin/g++-12": "",
                            "/usr/bin/gcc-11": "", "/usr/bin/gcc-ar-12": ""},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_DEBIAN12},
                               {"argv": ["/usr/bin/g++", "--version"], "stdout": GXX_DEBIAN12}])
    f = compiler_facts(host)
    assert f.value("compiler.gcc")["version"] == "12.2.0"
    assert f.value("compiler.gxx")["version"] == "12.2.0"
    assert f.value("compiler.clang") is None  # not installed is a known answer
    versions = [(c["path"], c["version"], c["kind"]) for c in f.value("compiler.gcc_versions")]
    assert versions == [("/usr/bin/gcc", "12.2.0", "default"), ("/usr/bin/gcc-11", "11", "versioned"),
                        ("/usr/bin/gcc-12", "12", "versioned")]  # gcc-ar-12 is no compiler
    assert [c.get("gxx") for c in f.value("compiler.gcc_versions")[1:]] == [False, True]


def test_ubuntu2204_clang_and_nvcc_host_override():
    host = make_host(files={"/usr/bin/gcc": "", "/usr/bin/clang": "", "/usr/bin/gcc-10": ""},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_UBUNTU2204},
                               {"argv": ["/usr/bin/clang", "--version"], "stdout": CLANG_UBUNTU2204}],
                     environ={"PATH": PATH, "NVCC_CCBIN": "/usr/bin/gcc-10"})
    f = compiler_facts(host)
    assert f.value("compiler.gcc")["version"] == "11.4.0"
    assert f.value("compiler.clang")["version"] == "14.0.0"
    assert f.value("compiler.nvcc_host") == {"var": "NVCC_CCBIN", "path": "/usr/bin/gcc-10", "exists": True}


def test_rhel_gcc_toolset_and_ccbin_in_nvcc_flags():
    host = make_host(files={"/usr/bin/gcc": "", "/opt/rh/gcc-toolset-12/root/usr/bin/gcc": "",
                            "/opt/rh/gcc-toolset-12/root/usr/bin/g++": "", "/opt/rh/devtoolset-9/enable": ""},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_RHEL9}],
                     environ={"PATH": PATH, "NVCC_PREPEND_FLAGS": "-ccbin /opt/rh/gcc-toolset-13/root/usr/bin/g++"})
    f = compiler_facts(host)
    assert f.value("compiler.gcc")["version"] == "11.4.1"
    toolsets = [c for c in f.value("compiler.gcc_versions") if c["kind"] == "gcc-toolset"]
    assert toolsets == [{"path": "/opt/rh/gcc-toolset-12/root/usr/bin/gcc", "version": "12", "kind": "gcc-toolset",
                         "gxx": True}]
    assert not [c for c in f.value("compiler.gcc_versions") if c["kind"] == "devtoolset"]  # no gcc inside
    host_cc = f.value("compiler.nvcc_host")
    assert host_cc["var"] == "NVCC_PREPEND_FLAGS" and host_cc["exists"] is False


def test_broken_and_hung_compilers_are_unknown_and_timed_out():
    host = make_host(files={"/usr/bin/gcc": "", "/usr/bin/g++": ""},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": "\x00\x7fELF garbage"},
                               {"argv": ["/usr/bin/g++", "--version"], "timed_out": True, "returncode": None}])
    f = compiler_facts(host)
    assert f.get("compiler.gcc").status == "unknown" and "unexpected output" in f.get("compiler.gcc").reason
    assert f.get("compiler.gxx").status == "timed_out"


def test_parsers():
    assert parse_gcc_version(GCC_RHEL9) == "11.4.1"
    assert parse_gcc_version(GCC_UBUNTU2204) == "11.4.0"
    assert parse_gcc_version("") is None
    assert parse_clang_version(CLANG_UBUNTU2204) == "14.0.0"


def test_cc_is_read_as_the_compiler_torch_extensions_give_nvcc():
    # CC=/usr/bin/gcc-10 beside Ubuntu 22.04's default gcc 11.4 (banner of gcc-10 from Ubuntu 22.04's gcc-10
    # package: same layout as the others)
    gcc10 = "gcc-10 (Ubuntu 10.5.0-1ubuntu1~22.04) 10.5.0\nCopyright (C) 2020 Free Software Foundation, Inc.\n" + FSF
    host = make_host(files={"/usr/bin/gcc": "", "/usr/bin/gcc-10": ""},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_UBUNTU2204},
                               {"argv": ["/usr/bin/gcc-10", "--version"], "stdout": gcc10}],
                     environ={"PATH": PATH, "CC": "/usr/bin/gcc-10"})
    f = compiler_facts(host)
    assert f.value("compiler.extension_cc") == {"var": "CC", "path": "/usr/bin/gcc-10", "exists": True,
                                                "version": "10.5.0"}
    # unset, and a CC that is not there: known answers without a version
    host = make_host(files={"/usr/bin/gcc": ""}, environ={"PATH": PATH},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_UBUNTU2204}])
    assert compiler_facts(host).value("compiler.extension_cc") is None
    host = make_host(files={"/usr/bin/gcc": ""}, environ={"PATH": PATH, "CC": "gcc-14"},
                     commands=[{"argv": ["/usr/bin/gcc", "--version"], "stdout": GCC_UBUNTU2204}])
    assert compiler_facts(host).value("compiler.extension_cc") == {"var": "CC", "path": "gcc-14", "exists": False}

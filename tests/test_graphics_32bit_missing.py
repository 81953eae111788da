"""``driver.graphics_libraries_32bit_missing``: the driver's 64-bit graphics libraries without its 32-bit ones on a
machine with i386 libraries and a 32-bit program that renders (Steam's client, 32-bit Wine).

NVIDIA's Ubuntu packaging builds libnvidia-gl-<flavour> for i386 and amd64 (debian/templates/control.in:
``Architecture: i386 amd64 ppc64el arm64``, ``Multi-Arch: same``): the 32-bit half is the package
``libnvidia-gl-<flavour>:i386``, installing libGLX_nvidia.so.0 and libnvidia-glcore.so.<version> in
/usr/lib/i386-linux-gnu.

Machines: the corpus case rebuilt from https://github.com/ValveSoftware/steam-for-linux/issues/7067 (Ubuntu 20.04,
driver 455.32.00 from NVIDIA's CUDA apt repository, i386 in dpkg's architectures, Steam's ubuntu12_32 client, only
Mesa's 32-bit GL), and the healthy openSUSE Tumbleweed case of https://github.com/ValveSoftware/Proton/issues/5081
(the G05 packages' 32-bit libraries in /usr/lib), replayed from their snapshots; each variant changes one thing as the
fix or another cause would.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings
from tests.test_graphics_libraries_missing import _add_file, _drop_tree

CASE = "b88e-ubuntu2004-cuda-repo-driver45532-cuda111-steam-client-no-32bit-libnvidia-gl-i386"
SUSE = "healthy-b88e-opensuse-tumbleweed-gtx1070-driver4705702-steam-proton-63-vulkan-icd-in-etc-stack-fine-proton-side"
CODE = "driver.graphics_libraries_32bit_missing"
LIB32 = "/usr/lib/i386-linux-gnu"


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _drop_cache_lines(doc: Dict[str, Any], needle: str) -> None:
    """Take the loader cache's lines holding ``needle`` out of every recorded ``ldconfig -p``, its count with them."""
    for cmd in doc["commands"]:
        if cmd["argv"][-1] != "-p":
            continue
        head, *lines = cmd["stdout"].splitlines()
        kept = [line for line in lines if needle not in line]
        cmd["stdout"] = "\n".join(["%d libs found in cache `/etc/ld.so.cache'" % len(kept)] + kept) + "\n"


def test_cuda_repository_driver_without_32bit_gl_and_steam_is_told_libnvidia_gl_i386() -> None:
    (f,) = _found(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "32-bit" in f.title and "455.32.00" in f.title and "Steam" in f.title
    assert f.detail.startswith("The driver came from NVIDIA's CUDA apt repository")
    assert "/etc/apt/sources.list.d/cuda-ubuntu2004-x86_64.list" in f.detail
    assert "/var/lib/dpkg/arch" in f.detail and LIB32 in f.detail
    assert "/home/user/.local/share/Steam/ubuntu12_32/steam" in f.detail
    assert f.fix.commands == ["sudo apt install libnvidia-gl-455:i386"]
    assert "ubuntu-packaging-nvidia-driver" in f.source["url"]


def test_quiet_once_libnvidia_gl_i386_is_installed() -> None:
    doc = corpus_snapshot(CASE)
    for name in ("libGLX_nvidia.so.0", "libGLX_nvidia.so.455.32.00", "libnvidia-glcore.so.455.32.00"):
        _add_file(doc, posixpath.join(LIB32, name))
    assert _found(doc) == []


def test_ubuntu_xenial_layout_in_lib32_nvidia_branch_counts() -> None:
    """Ubuntu 16.04's nvidia-<branch> packages put the 32-bit libraries in /usr/lib32/nvidia-<branch>."""
    doc = corpus_snapshot(CASE)
    _add_file(doc, "/usr/lib32/nvidia-455/libGLX_nvidia.so.0")
    assert _found(doc) == []


def test_a_32bit_cache_entry_counts_even_where_the_directories_were_not_read() -> None:
    doc = corpus_snapshot(CASE)
    for cmd in doc["commands"]:
        if cmd["argv"][-1] == "-p":
            head, *lines = cmd["stdout"].splitlines()
            lines.append("\tlibGLX_nvidia.so.0 (libc6) => /opt/nvidia32/libGLX_nvidia.so.0")
            cmd["stdout"] = "\n".join(["%d libs found in cache `/etc/ld.so.cache'" % len(lines)] + lines) + "\n"
    assert _found(doc) == []


def test_quiet_without_a_32bit_program_that_renders() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/home/user/.local/share/Steam")
    _drop_tree(doc, "/home/user/.steam")
    _drop_tree(doc, "/usr/games/steam")
    assert _found(doc) == []


def test_the_steam_launcher_alone_counts_and_so_does_wine32() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/home/user/.local/share/Steam")
    _drop_tree(doc, "/home/user/.steam")
    (f,) = _found(doc)
    assert "/usr/games/steam" in f.detail
    _drop_tree(doc, "/usr/games/steam")
    _add_file(doc, LIB32 + "/wine/wine")
    (f,) = _found(doc)
    assert "Wine (32-bit)" in f.title


def test_quiet_without_i386_libraries() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"]["/var/lib/dpkg/arch"] = {"text": "amd64\n"}
    _drop_tree(doc, LIB32 + "/libc.so.6")
    _drop_tree(doc, "/lib/i386-linux-gnu/libc.so.6")
    _drop_cache_lines(doc, "/lib/i386-linux-gnu/libc.so.6")
    assert _found(doc) == []


def test_a_driver_without_any_graphics_library_is_left_to_graphics_libraries_missing() -> None:
    doc = corpus_snapshot(CASE)
    names = ("libGLX_nvidia", "libEGL_nvidia", "libnvidia-glcore", "libnvidia-eglcore")
    for path in [p for p in doc["files"] if posixpath.basename(p).startswith(names)]:
        _drop_tree(doc, path)
    for path in [p for p in doc["links"] if posixpath.basename(p).startswith(("libGLX_nvidia", "libEGL_nvidia"))]:
        _drop_tree(doc, path)
    for name in ("libGLX_nvidia", "libEGL_nvidia", "libnvidia-glcore", "libnvidia-eglcore"):
        _drop_cache_lines(doc, name)
    assert _found(doc) == []


def test_opensuse_with_its_32bit_packages_in_usr_lib_stays_quiet() -> None:
    assert _found(corpus_snapshot(SUSE)) == []


def test_opensuse_without_its_32bit_packages_is_told_to_install_them() -> None:
    doc = corpus_snapshot(SUSE)
    for path in [p for p in list(doc["files"]) + list(doc["links"])
                 if posixpath.dirname(p) == "/usr/lib" and "nvidia" in p]:
        _drop_tree(doc, path)
    for name in ("libGLX_nvidia", "libEGL_nvidia", "libnvidia-glcore", "libnvidia-eglcore"):
        _drop_cache_lines(doc, "(libc6) => /usr/lib/" + name)
    (f,) = _found(doc)
    assert "470.57.02" in f.title and "a 32-bit C library is installed" in f.detail
    assert "openSUSE: the -32bit packages" in f.fix.text


def test_the_code_is_explained() -> None:
    from envdoctor.checks import code_docs

    docs = code_docs()
    assert docs[CODE].severity == "warning" and "32-bit" in docs[CODE].summary

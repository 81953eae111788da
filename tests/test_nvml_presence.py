"""Skipping the NVML query when libnvidia-ml.so.1 certainly cannot be loaded (most machines without
a driver): the decision must never say "absent" for a library dlopen would find.  The loader caches
here are written by the real `ldconfig` from directories holding a real (empty) shared object."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from envdoctor.host import nvml_worker
from envdoctor.host.live import NVML_DIRS, LiveHost

LDCONFIG = shutil.which("ldconfig") or next((p for p in ("/usr/sbin/ldconfig", "/sbin/ldconfig")
                                              if os.path.exists(p)), None)
CC = shutil.which("cc") or shutil.which("gcc")


@pytest.fixture()
def clean_env(monkeypatch):
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    if not nvml_worker.library_absent(NVML_DIRS):
        pytest.skip("this machine has an NVIDIA driver library installed")


def _cache_of(tmp_path, with_library: bool) -> str:
    if not (LDCONFIG and CC):
        pytest.skip("needs ldconfig and a C compiler")
    libs = tmp_path / "libs"
    libs.mkdir()
    if with_library:
        src = tmp_path / "x.c"
        src.write_text("int nvmlInit_v2(void) { return 0; }\n")
        subprocess.run([CC, "-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1", "-o",
                        str(libs / "libnvidia-ml.so.1"), str(src)], check=True, capture_output=True)
    conf = tmp_path / "ld.so.conf"
    conf.write_text(str(libs) + "\n")
    cache = tmp_path / "ld.so.cache"
    r = subprocess.run([LDCONFIG, "-X", "-C", str(cache), "-f", str(conf)], capture_output=True, text=True)
    if r.returncode != 0 or not cache.exists():
        pytest.skip("ldconfig cannot write a cache here: " + r.stderr.strip()[-200:])
    listing = subprocess.run([LDCONFIG, "-p", "-C", str(cache)], capture_output=True, text=True).stdout
    assert ("libnvidia-ml.so.1" in listing) is with_library  # the cache really says what we think
    return str(cache)


def test_absent_when_neither_the_cache_nor_any_directory_has_it(tmp_path, clean_env):
    assert nvml_worker.library_absent(NVML_DIRS, _cache_of(tmp_path, with_library=False)) is True


def test_present_when_the_loader_cache_names_it(tmp_path, clean_env):
    assert nvml_worker.library_absent(NVML_DIRS, _cache_of(tmp_path, with_library=True)) is False


def test_present_when_in_ld_library_path_or_preloaded(tmp_path, clean_env, monkeypatch):
    cache = _cache_of(tmp_path, with_library=False)
    lib_dir = tmp_path / "elsewhere"
    lib_dir.mkdir()
    (lib_dir / "libnvidia-ml.so.1").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/nonexistent:" + str(lib_dir))
    assert nvml_worker.library_absent(NVML_DIRS, cache) is False
    monkeypatch.delenv("LD_LIBRARY_PATH")
    monkeypatch.setenv("LD_PRELOAD", "/opt/x/libnvidia-ml.so.1")
    assert nvml_worker.library_absent(NVML_DIRS, cache) is False


def test_unreadable_cache_means_ask(tmp_path, clean_env):
    assert nvml_worker.library_absent(NVML_DIRS, str(tmp_path / "no-such-cache")) is False


def test_no_query_process_and_the_same_answer_when_absent(clean_env):
    host = LiveHost(timeout=5)
    host.start_nvml()
    assert host._nvml_child is None  # nothing forked
    res = host.nvml()
    # ...and the answer the query itself gives on such a machine (what the probes then report).
    assert res.error is None and res.data == nvml_worker.collect() == nvml_worker.NOT_FOUND


def test_the_usual_places_cover_every_directory_the_loader_searches() -> None:
    """A wrong "absent" skips NVML on a machine with a driver: the places looked at must cover glibc's default
    directories on every distribution (/lib included: a Debian without merged /usr searches it), WSL's and a
    container's injected driver, and every place the driver probe looks for the driver's files."""
    from envdoctor import osinfo

    assert set(osinfo.LOADER_DIRS) <= set(NVML_DIRS)
    assert "/lib" in NVML_DIRS and osinfo.WSL_LIB_DIR in NVML_DIRS
    assert set(osinfo.DRIVER_DIRS) <= set(NVML_DIRS) and set(osinfo.CONTAINER_DRIVER_DIRS) <= set(NVML_DIRS)


def test_library_absent_looks_in_the_directories_it_is_given(tmp_path, clean_env) -> None:
    lib = tmp_path / "driver"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").write_bytes(b"")
    cache = str(tmp_path / "ld.so.cache")
    (tmp_path / "ld.so.cache").write_bytes(b"glibc-ld.so.cache1.1")
    assert nvml_worker.library_absent((str(lib),), cache) is False
    assert nvml_worker.library_absent((), cache) is True

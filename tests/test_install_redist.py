"""The redist recipe, executed for real against an HTTP server on 127.0.0.1.

The manifest shape and names come from NVIDIA's real
https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.4.1.json
(copy in NixOS/nixpkgs pkgs/development/cuda-modules/cuda/manifests/redistrib_12.4.1.json);
the served archives are small .tar.xz files built here with the same layout
(one top directory ``<component>-linux-x86_64-<version>-archive/`` holding bin/ include/ lib/),
so their sha256 and size are recomputed for the served copy.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from typing import Dict, List

import pytest
from click.testing import CliRunner

from envdoctor.cli.install import install
from envdoctor.install.download import DownloadError, DownloadOptions, default_progress_stream, download
from envdoctor.install.executor import Executor
from envdoctor.install.plan import render_sh
from envdoctor.install.validate import ValidationError
from envdoctor.recipes import cuda_redist

from .loopback import Server

# Excerpt of the real redistrib_12.4.1.json (NixOS/nixpkgs
# pkgs/development/cuda-modules/cuda/manifests/redistrib_12.4.1.json, mirroring
# https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.4.1.json), values verbatim.
REAL_CUDA_12_4_1 = {
    "release_date": "2024-04-03",
    "release_label": "12.4.1",
    "release_product": "cuda",
    "cuda_cccl": {
        "name": "CXX Core Compute Libraries", "license": "CUDA Toolkit", "license_path": "cuda_cccl/LICENSE.txt",
        "version": "12.4.127",
        "linux-x86_64": {
            "relative_path": "cuda_cccl/linux-x86_64/cuda_cccl-linux-x86_64-12.4.127-archive.tar.xz",
            "sha256": "e1636f27a142d24e73dfd831c54bbf5575b498fd5900648d7372fae46f824fdf",
            "md5": "70fcec0e14bd2e47d0758425695bf55c", "size": "1157180"},
    },
    "cuda_compat": {
        "name": "CUDA compat L4T", "license": "CUDA Toolkit", "license_path": "cuda_compat/LICENSE.txt",
        "version": "12.4.35753180",
        "linux-aarch64": {
            "relative_path": "cuda_compat/linux-aarch64/cuda_compat-linux-aarch64-12.4.35753180-archive.tar.xz",
            "sha256": "7b8a09396c61ccf94a55a418c6a16e371f4e8b9fc4bdae7e2c33cbabcb7a97f3",
            "md5": "91bb5bc8c790d31cb43fa2cca1b690d6", "size": "19191916"},
    },
    "cuda_cudart": {
        "name": "CUDA Runtime (cudart)", "license": "CUDA Toolkit", "license_path": "cuda_cudart/LICENSE.txt",
        "version": "12.4.127",
        "linux-x86_64": {
            "relative_path": "cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz",
            "sha256": "0483bff9a36e7a44465db3cd42874f6f70f019297dcf803fbefcbf58d7448c8f",
            "md5": "5c452d73cb03a42c1711f8655fa2fb8a", "size": "1099680"},
        "linux-sbsa": {
            "relative_path": "cuda_cudart/linux-sbsa/cuda_cudart-linux-sbsa-12.4.127-archive.tar.xz",
            "sha256": "fb96abcff3544384440b9259f9aeab9bf222a5775348546ef87c68ee02eee379",
            "md5": "bb5fdb01994b0aaf329fb8c7cd825750", "size": "1090256"},
        "windows-x86_64": {
            "relative_path": "cuda_cudart/windows-x86_64/cuda_cudart-windows-x86_64-12.4.127-archive.zip",
            "sha256": "6a1c32e68ee1a95ca17334691ff9ad1ffe7f352c24a083d55e4c96b8063b2bcb",
            "md5": "9b8b0f24f6b0777ef3b0823f8a0ff2bb", "size": "2474721"},
    },
    "cuda_nvcc": {
        "name": "CUDA NVCC", "license": "CUDA Toolkit", "license_path": "cuda_nvcc/LICENSE.txt",
        "version": "12.4.131",
        "linux-x86_64": {
            "relative_path": "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.4.131-archive.tar.xz",
            "sha256": "7ffba1ada0e4b8c17e451ac7a60d386aa2642ecd08d71202a0b100c98bd74681",
            "md5": "66486841dab183168d79684c74df1928", "size": "51184484"},
    },
}

# Excerpt of the real cuDNN manifest redistrib_9.1.0.json (NixOS/nixpkgs
# pkgs/development/cuda-modules/cudnn/manifests/redistrib_9.1.0.json, mirroring
# https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.1.0.json): one level per CUDA major.
REAL_CUDNN_9_1_0 = {
    "release_date": "2024-04-12", "release_label": "9.1.0", "release_product": "cudnn",
    "cudnn": {
        "name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn", "license_path": "cudnn/LICENSE.txt",
        "version": "9.1.0.70",
        "linux-x86_64": {
            "cuda11": {"relative_path": "cudnn/linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda11-archive.tar.xz",
                       "sha256": "8210dc5f0d6a04ce20ebfeb39e41e56e22e77a298b1657f9e3db80c650110310",
                       "md5": "a9feda485fa5bf167a37eebd0c2dc07d", "size": "860293208"},
            "cuda12": {"relative_path": "cudnn/linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz",
                       "sha256": "fdc6d6f28217b82c400adfdae8f0364fa36c5fb6cb683933e8900a748e70b263",
                       "md5": "105585f6dd62cc013354d81a2a692d2e", "size": "862715244"},
        },
        "cuda_variant": ["11", "12"],
    },
}

# What each test archive holds below its top directory (the real archives' layout, tiny contents).
ARCHIVE_FILES = {
    "cuda_cudart": {"include/cuda_runtime_api.h": b"#define CUDART_VERSION 12040\n",
                    "lib/libcudart.so.12.4.127": b"\x7fELF fake cudart\n", "LICENSE": b"cudart license\n"},
    "cuda_nvcc": {"bin/nvcc": b"#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n",
                  "include/crt/host_config.h": b"/* host_config */\n", "LICENSE": b"nvcc license\n",
                  # incompressible filler (400 KiB) so a download cut off halfway has written whole chunks
                  "lib/libnvptxcompiler_static.a": b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(12800))},
    "cuda_cccl": {"include/cuda/std/version": b"// cccl\n", "LICENSE": b"cccl license\n"},
}


def build_archive(component: str, version: str) -> bytes:
    top = "%s-linux-x86_64-%s-archive" % (component, version)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for rel, data in sorted(ARCHIVE_FILES[component].items()):
            info = tarfile.TarInfo("%s/%s" % (top, rel))
            info.size = len(data)
            info.mode = 0o755 if rel.startswith("bin/") else 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@functools.lru_cache(maxsize=None)
def _archive_bytes(component: str, version: str) -> bytes:
    return build_archive(component, version)


def served_manifest(components=("cuda_cudart", "cuda_nvcc", "cuda_cccl")) -> tuple:
    """The real 12.4.1 manifest with sha256/size replaced by those of the tiny archives, and the files to serve."""
    doc = copy.deepcopy(REAL_CUDA_12_4_1)
    files: Dict[str, bytes] = {}
    for comp in components:
        entry = doc[comp]
        data = _archive_bytes(comp, entry["version"])
        plat = entry["linux-x86_64"]
        plat["sha256"] = hashlib.sha256(data).hexdigest()
        plat["md5"] = hashlib.md5(data).hexdigest()
        plat["size"] = str(len(data))
        files["/redist/" + plat["relative_path"]] = data
    files["/redist/redistrib_12.4.1.json"] = json.dumps(doc).encode()
    return doc, files


@pytest.fixture
def server():
    doc, files = served_manifest()
    srv = Server(files)
    srv.doc = doc
    yield srv
    srv.close()


def make_plan(srv: Server, prefix: str, components=("cuda_cudart", "cuda_nvcc", "cuda_cccl"), force: bool = False):
    req = cuda_redist.RedistRequest(product="cuda", version="12.4.1", prefix=prefix, base_url=srv.url + "/redist",
                                    components=list(components), platform="linux-x86_64", force=force,
                                    resume_command="envdoctor install cuda --version 12.4.1 --prefix %s --yes" % prefix)
    return cuda_redist.plan(req, cuda_redist.parse_manifest(srv.doc))


def run_plan(plan, tmp_path, timeout: float = 5.0, retries: int = 0):
    lines: List[str] = []
    ex = Executor(lines.append, yes=True, uid=lambda: 1000, log_path=str(tmp_path / "install.log"),
                  download_options=DownloadOptions(timeout=timeout, retries=retries, backoff=0.0))
    return ex.execute(plan), lines


# -- manifest parsing (real documents) ---------------------------------------
def test_real_cuda_manifest_is_read_with_versions_and_checksums():
    m = cuda_redist.parse_manifest(REAL_CUDA_12_4_1)
    assert m.release_label == "12.4.1"
    nvcc = m.components["cuda_nvcc"]
    assert nvcc.version == "12.4.131"
    arch = nvcc.archives["linux-x86_64"][""]
    assert arch.size == 51184484
    assert arch.sha256 == "7ffba1ada0e4b8c17e451ac7a60d386aa2642ecd08d71202a0b100c98bd74681"
    # windows archives are not Linux platforms and are ignored
    assert "windows-x86_64" not in m.components["cuda_cudart"].archives


def test_default_components_present_in_manifest_are_chosen_and_others_left_out():
    m = cuda_redist.parse_manifest(REAL_CUDA_12_4_1)
    req = cuda_redist.RedistRequest("cuda", "12.4.1", "/scratch/u/cuda-12.4")
    names = [a.component for a in cuda_redist.select(req, m)]
    assert names == ["cuda_cudart", "cuda_nvcc", "cuda_cccl"]  # cuda_compat: not a default, and aarch64 only


def test_unknown_component_is_refused_naming_what_the_manifest_has():
    m = cuda_redist.parse_manifest(REAL_CUDA_12_4_1)
    req = cuda_redist.RedistRequest("cuda", "12.4.1", "/scratch/u/cuda", components=["libcudnn"])
    with pytest.raises(ValidationError, match="libcudnn.*it has: cuda_cccl"):
        cuda_redist.select(req, m)


def test_cudnn_manifest_picks_the_requested_cuda_variant():
    m = cuda_redist.parse_manifest(REAL_CUDNN_9_1_0)
    req = cuda_redist.RedistRequest("cudnn", "9.1.0", "/scratch/u/cudnn", cuda_variant="cuda11")
    (arch,) = cuda_redist.select(req, m)
    assert arch.filename == "cudnn-linux-x86_64-9.1.0.70_cuda11-archive.tar.xz"
    req.cuda_variant = ""
    (arch,) = cuda_redist.select(req, m)
    assert arch.filename.endswith("_cuda12-archive.tar.xz")  # the newest by default
    plan = cuda_redist.plan(req, m)
    assert next(s for s in plan.steps if s.id.startswith("download-")).action.url == ("https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/linux-x86_64/"
                                        "cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz")


@pytest.mark.parametrize("field,value,message", [
    ("relative_path", "../../etc/passwd", "not a plain relative path"),
    ("relative_path", "/etc/passwd", "not a plain relative path"),
    ("relative_path", "a/b;rm -rf ~.tar.xz", "not a plain relative path"),
    ("sha256", "abc", "not 64 hex digits"),
    ("size", "lots", "not a number"),
])
def test_hostile_manifest_fields_are_refused(field, value, message):
    doc = copy.deepcopy(REAL_CUDA_12_4_1)
    doc["cuda_cudart"]["linux-x86_64"][field] = value
    with pytest.raises(ValidationError, match=message):
        cuda_redist.parse_manifest(doc)


# -- installing for real -----------------------------------------------------
def test_install_into_prefix_puts_merged_files_and_version_json(server, tmp_path):
    prefix = str(tmp_path / "cuda-12.4")
    result, lines = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 0, lines
    assert open(os.path.join(prefix, "bin", "nvcc"), "rb").read().startswith(b"#!/bin/sh")
    assert os.access(os.path.join(prefix, "bin", "nvcc"), os.X_OK)
    assert os.path.isfile(os.path.join(prefix, "include", "cuda_runtime_api.h"))
    assert os.path.isfile(os.path.join(prefix, "include", "cuda", "std", "version"))
    assert os.path.isfile(os.path.join(prefix, "lib64", "libcudart.so.12.4.127"))  # via the lib64 -> lib link
    vj = json.load(open(os.path.join(prefix, "version.json")))
    assert vj["cuda"] == {"name": "CUDA SDK", "version": "12.4.1"}
    assert vj["cuda_nvcc"]["version"] == "12.4.131"
    assert not os.path.exists(cuda_redist.staging_dir(prefix))  # staging cleaned up
    log = open(str(tmp_path / "install.log")).read()
    assert "step download-cuda_nvcc: done" in log and "plan finished" in log


def test_rerun_skips_every_step(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    assert run_plan(make_plan(server, prefix), tmp_path)[0].exit_code == 0
    before = len(server.requests)
    result, lines = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 0
    assert result.count("skipped") == len(result.outcomes) and result.count("done") == 0
    assert len(server.requests) == before  # nothing downloaded again


def test_corrupted_archive_leaves_nothing_in_the_prefix(server, tmp_path):
    path = "/redist/" + server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    data = bytearray(server.files[path])
    data[len(data) // 2] ^= 0xFF  # same size, different bytes
    server.files[path] = bytes(data)
    prefix = str(tmp_path / "cuda")
    result, lines = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 1
    assert "sha256 mismatch" in result.message
    assert "envdoctor install cuda --version 12.4.1" in result.message  # how to resume
    assert not os.path.exists(prefix)
    staged = os.path.join(cuda_redist.staging_dir(prefix), "downloads")
    assert not any(n.startswith("cuda_nvcc") for _d, _s, names in os.walk(staged) for n in names)  # deleted


def test_download_cut_off_halfway_is_resumed_with_range_on_rerun(server, tmp_path):
    rel = server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    server.modes["/redist/" + rel] = ["cut"]
    prefix = str(tmp_path / "cuda")
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 1
    assert "cut off" in result.message and not os.path.exists(prefix)
    sha = server.doc["cuda_nvcc"]["linux-x86_64"]["sha256"]
    part = os.path.join(cuda_redist.staging_dir(prefix), "downloads", sha, os.path.basename(rel) + ".part")
    kept = os.path.getsize(part)
    assert kept > 0
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 0
    assert server.ranges(rel)[-1] == "bytes=%d-" % kept
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))


def test_interrupted_download_resumes_within_one_run_when_retries_are_allowed(server, tmp_path):
    rel = server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    server.modes["/redist/" + rel] = ["cut"]
    entry = server.doc["cuda_nvcc"]["linux-x86_64"]
    dest = str(tmp_path / "nvcc.tar.xz")
    download(server.url + "/redist/" + rel, dest, entry["sha256"], int(entry["size"]),
             DownloadOptions(timeout=5, retries=1, backoff=0))
    assert hashlib.sha256(open(dest, "rb").read()).hexdigest() == entry["sha256"]
    assert server.ranges(rel)[0] is None and server.ranges(rel)[1].startswith("bytes=")


def test_a_mirror_with_etags_resumes_the_archive_with_if_range_on_rerun(server, tmp_path):
    rel = server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    server.etags["/redist/" + rel] = '"nvcc-12.4.131"'
    server.fail("/redist/" + rel, "cut")
    prefix = str(tmp_path / "cuda")
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 1 and "cut off" in result.message
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 0, result.message
    last = server.requests_for(rel)[-1]
    assert last["range"].startswith("bytes=") and last["if_range"] == '"nvcc-12.4.131"'
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))


def test_a_server_error_on_an_archive_is_retried_within_the_run(server, tmp_path):
    rel = server.doc["cuda_cccl"]["linux-x86_64"]["relative_path"]
    server.fail("/redist/" + rel, "503")
    prefix = str(tmp_path / "cuda")
    result, _ = run_plan(make_plan(server, prefix), tmp_path, retries=1)
    assert result.exit_code == 0, result.message
    assert len(server.requests_for(rel)) == 2
    server.fail("/redist/" + rel, "503")
    result, _ = run_plan(make_plan(server, str(tmp_path / "other")), tmp_path, retries=0)
    assert result.exit_code == 1 and "503" in result.message


def test_stalled_server_times_out_with_a_clear_message(server, tmp_path):
    rel = server.doc["cuda_cudart"]["linux-x86_64"]["relative_path"]
    server.modes["/redist/" + rel] = ["stall", "stall"]
    entry = server.doc["cuda_cudart"]["linux-x86_64"]
    started = time.monotonic()
    with pytest.raises(DownloadError, match=r"stopped sending data \(no data for 0.5s\) \(tried 2 times\)"):
        download(server.url + "/redist/" + rel, str(tmp_path / "x.tar.xz"), entry["sha256"], int(entry["size"]),
                 DownloadOptions(timeout=0.5, retries=1, backoff=0))
    assert time.monotonic() - started < 8


def test_existing_prefix_is_not_overwritten_without_force(server, tmp_path):
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    (prefix / "results.csv").write_text("keep me")
    result, _ = run_plan(make_plan(server, str(prefix)), tmp_path)
    assert result.exit_code == 1 and "never overwritten without --force" in result.message
    assert (prefix / "results.csv").read_text() == "keep me"
    # --force replaces toolkits only: a directory of results is refused, untouched
    result, _ = run_plan(make_plan(server, str(prefix), force=True), tmp_path)
    assert result.exit_code == 1 and "not a CUDA toolkit" in result.message and "--force-any" in result.message
    assert (prefix / "results.csv").read_text() == "keep me"


def test_force_moves_an_older_toolkit_aside_and_says_where(server, tmp_path):
    prefix = tmp_path / "cuda"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "nvcc").write_text("old nvcc")
    (prefix / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.0"}}))
    result, lines = run_plan(make_plan(server, str(prefix), force=True), tmp_path)
    assert result.exit_code == 0, lines
    (old,) = [p for p in tmp_path.iterdir() if p.name.startswith("cuda.envdoctor-old-")]
    assert (old / "bin" / "nvcc").read_text() == "old nvcc"  # moved aside, not deleted
    assert any("moved aside to " + str(old) in line for line in lines)
    assert json.load(open(str(prefix / "version.json")))["cuda"]["version"] == "12.4.1"


def test_force_any_moves_any_directory_aside(server, tmp_path):
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    (prefix / "results.csv").write_text("keep me")
    p = make_plan(server, str(prefix), force=True)
    for st in p.steps:
        if st.id == "move-into-place":
            st.action = type(st.action)(st.action.src, st.action.dest, replace=True, replace_any=True)
    result, lines = run_plan(p, tmp_path)
    assert result.exit_code == 0, lines
    (old,) = [q for q in tmp_path.iterdir() if q.name.startswith("cuda.envdoctor-old-")]
    assert (old / "results.csv").read_text() == "keep me"


# -- through the command line ------------------------------------------------
def test_cli_installs_from_a_mirror_and_tells_where_the_log_is(server, tmp_path):
    prefix = str(tmp_path / "cuda-12.4")
    log = str(tmp_path / "cli.log")
    res = CliRunner().invoke(install, ["cuda", "--version", "12.4.1", "--prefix", prefix, "--mirror",
                                       server.url + "/redist/", "--components", "cuda_cudart,cuda_nvcc",
                                       "--platform", "linux-x86_64", "--yes", "--log-file", log, "--retries", "0"])
    assert res.exit_code == 0, res.output
    assert "Log: %s" % log in res.output
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))
    assert set(json.load(open(os.path.join(prefix, "version.json")))) == {"cuda", "cuda_cudart", "cuda_nvcc"}
    # ...then diagnose runs again and finds the toolkit in the prefix (through CUDA_HOME, as its user will).
    seen = res.output[res.output.index("envdoctor now sees:"):]
    home = next(line for line in seen.splitlines() if "CUDA_HOME" in line)
    assert prefix in home and "12.4" in home, seen


def test_cli_dry_run_json_lists_downloads_with_checksums_and_changes_nothing(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    res = CliRunner().invoke(install, ["cuda", "--version", "12.4.1", "--prefix", prefix, "--mirror",
                                       server.url + "/redist", "--platform", "linux-x86_64", "--dry-run",
                                       "--format", "json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    downloads = [s["action"] for s in plan["steps"] if s["action"]["kind"] == "download"]
    assert {d["sha256"] for d in downloads} == {server.doc[c]["linux-x86_64"]["sha256"]
                                                for c in ("cuda_cudart", "cuda_nvcc", "cuda_cccl")}
    assert plan["method"] == "redist" and plan["needs_root"] is False
    assert not os.path.exists(prefix) and not os.path.exists(cuda_redist.staging_dir(prefix))


def test_cli_missing_release_on_the_mirror_is_exit_2(server, tmp_path):
    res = CliRunner().invoke(install, ["cuda", "--version", "12.9.9", "--prefix", str(tmp_path / "c"), "--mirror",
                                       server.url + "/redist", "--platform", "linux-x86_64", "--dry-run",
                                       "--retries", "0"])
    assert res.exit_code == 2
    assert "cannot read the manifest" in res.output and "HTTP 404" in res.output
    res = CliRunner().invoke(install, ["cuda", "--version", "12.4", "--prefix", str(tmp_path / "c"), "--mirror",
                                       server.url + "/redist", "--platform", "linux-x86_64", "--dry-run",
                                       "--retries", "0"])
    assert res.exit_code == 2 and "full releases, e.g. 12.4.1" in res.output


@pytest.mark.skipif(not all(shutil.which(p) for p in ("bash", "curl", "sha256sum", "python3")),
                    reason="needs bash, curl, sha256sum and python3 (the script's extractor)")
def test_dry_run_script_installs_the_same_tree_when_run_with_bash(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    script = render_sh(make_plan(server, prefix))
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))
    assert json.load(open(os.path.join(prefix, "version.json")))["cuda_cccl"]["version"] == "12.4.127"
    assert not os.path.exists(cuda_redist.staging_dir(prefix))
    # the executor agrees the script's result is a finished install: everything is skipped
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.count("skipped") == len(result.outcomes)


def test_cli_refuses_an_existing_prefix_without_force_and_keeps_it(server, tmp_path):
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    (prefix / "mine.txt").write_text("keep me")
    res = CliRunner().invoke(install, ["cuda", "--version", "12.4.1", "--prefix", str(prefix), "--mirror",
                                       server.url + "/redist", "--platform", "linux-x86_64", "--yes",
                                       "--log-file", str(tmp_path / "l.log")])
    assert res.exit_code == 2 and "never overwritten without --force" in res.output
    assert (prefix / "mine.txt").read_text() == "keep me"
    assert not any("relative_path" in r["path"] or r["path"].endswith(".tar.xz") for r in server.requests)


def test_progress_bar_is_drawn_only_on_a_terminal_stream(server, tmp_path, monkeypatch):
    entry = server.doc["cuda_nvcc"]["linux-x86_64"]
    bar = io.StringIO()
    download(server.url + "/redist/" + entry["relative_path"], str(tmp_path / "n.tar.xz"), entry["sha256"],
             int(entry["size"]), DownloadOptions(timeout=5, retries=0, progress=bar))
    assert "100.0%" in bar.getvalue() and bar.getvalue().startswith("\rn.tar.xz")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: downloads stay quiet
    assert default_progress_stream() is None


def test_install_modules_do_not_import_requests_until_a_download_starts():
    code = ("import sys, envdoctor.cli.install, envdoctor.install.download, envdoctor.install.executor, "
            "envdoctor.recipes.cuda_redist; print('requests' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr

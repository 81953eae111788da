"""The frameworks probe, on miniature site-packages built from real wheel contents.

Every version.py / build_info.py / METADATA below is copied from a real wheel;
the comment above each says where it came from.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.frameworks import probe_frameworks, python_literals

from .conftest import make_host

SITE = "/home/ana/venv/lib/python3.10/site-packages"


def site_host(files: Dict[str, str], dirs: Optional[Dict[str, List[str]]] = None, machine: str = "x86_64"):
    """A venv whose site-packages holds ``files`` (paths relative to site-packages)."""
    return make_host(
        files={SITE + "/" + p: t for p, t in files.items()},
        dirs={SITE + "/" + p: e for p, e in (dirs or {}).items()},
        python={"executable": "/home/ana/venv/bin/python", "version": "3.10.12", "implementation": "cpython",
                "prefix": "/home/ana/venv", "base_prefix": "/usr", "sys_path": [SITE]},
        uname={"sysname": "Linux", "release": "5.15.0-105-generic", "version": "#115-Ubuntu SMP",
               "machine": machine},
    )


def facts_of(host) -> Facts:
    return Facts(probe_frameworks(ProbeContext(host)))


# torch/version.py of the torch-2.4.0+cu121 wheel (download.pytorch.org/whl/cu121); content as found by
# the code-search corpus, git_version e4ee3be4 is the v2.4.0 release commit.
TORCH_240_CU121_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.4.0+cu121'
debug = False
cuda: Optional[str] = '12.1'
git_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'
hip: Optional[str] = None
"""

# Requires-Dist lines of torch 2.4.0's METADATA (PyPI, https://pypi.org/project/torch/2.4.0/), as quoted
# from an installed torch-2.4.0.dist-info/METADATA in a public write-up found with the code search.
TORCH_240_METADATA = """Metadata-Version: 2.1
Name: torch
Version: 2.4.0+cu121
Requires-Dist: filelock
Requires-Dist: typing-extensions (>=4.8.0)
Requires-Dist: sympy
Requires-Dist: networkx
Requires-Dist: jinja2
Requires-Dist: fsspec
Requires-Dist: setuptools
Requires-Dist: nvidia-cuda-nvrtc-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cuda-cupti-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cublas-cu12 (==12.1.3.1) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cufft-cu12 (==11.0.2.54) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-curand-cu12 (==10.3.2.106) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cusolver-cu12 (==11.4.5.107) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cusparse-cu12 (==12.1.0.106) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-nccl-cu12 (==2.20.5) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-nvtx-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: triton (==3.0.0) ; platform_system == "Linux" and platform_machine == "x86_64" \
and python_version < "3.13"
Provides-Extra: opt-einsum
Requires-Dist: opt-einsum (>=3.3) ; extra == 'opt-einsum'
"""

# torch/version.py of a torch 1.13.1 CUDA 11.6 build: GsadAerothai/gsad, torch/version.py (a vendored
# site-packages copy).  The wheel name carries the +cu116 tag the file itself omits.
TORCH_1131_VERSION_PY = """__version__ = '1.13.1'
debug = False
cuda = '11.6'
git_version = '49444c3e546bf240bed24a101e747422d1f8a0ee'
hip = None
"""

# torch/lib of the download.pytorch.org CUDA 11 wheels of that era, which bundled cuDNN 8 (file names as
# listed from the unpacked torch-1.11.0+cu115-cp38-cp38-linux_x86_64.whl in a public note, plus the hashed
# libnvrtc name from a public S3 copy script); no nvidia-* Requires-Dist.
TORCH_CU11X_LIB = ["libc10.so", "libc10_cuda.so", "libcudnn.so.8", "libcudnn_adv_infer.so.8",
                   "libcudnn_adv_train.so.8", "libcudnn_cnn_infer.so.8", "libcudnn_cnn_train.so.8",
                   "libcudnn_ops_infer.so.8", "libcudnn_ops_train.so.8", "libnvrtc-672ee683.so.11.2",
                   "libtorch_cpu.so", "libtorch_cuda.so", "libtorch_cuda_linalg.so"]

# torch/version.py and Requires-Dist of torch-2.13.0+cpu, captured from this project's own dev venv
# (.venv/lib/python3.11/site-packages, installed from download.pytorch.org/whl/cpu).
TORCH_CPU_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""
TORCH_CPU_METADATA = """Metadata-Version: 2.4
Name: torch
Version: 2.13.0+cpu
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.10.0
Requires-Dist: setuptools>=77.0.3
Requires-Dist: sympy>=1.13.3
Requires-Dist: networkx>=2.5.1
Requires-Dist: jinja2
Requires-Dist: fsspec>=0.8.5
Requires-Dist: optree>=0.13.0; extra == "optree"
Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"
Requires-Dist: pyyaml; extra == "pyyaml"
"""

# tf.sysconfig.get_build_info() of the Linux tensorflow[and-cuda] wheel as printed in a public setup note
# (TF 2.16+: clang 17, CUDA 12.3), written the way TF's gen_build_info.py writes build_info.py.
TF_LINUX_BUILD_INFO = '''"""Auto-generated module providing information about the build."""
import collections

build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), \
('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_80', 'compute_90']), ('cuda_version', '12.3'), \
('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])
'''

# pypi-data/pypi-mirror-154, packages/tf-gpu/tf_gpu-2.9.1-cp38-cp38-win_amd64.whl/tensorflow/python/platform/
# build_info.py (verbatim body): Windows builds record CUDA 11.6 as '64_116'.
TF_291_WIN_BUILD_INFO = """\"\"\"Auto-generated module providing information about the build.\"\"\"
import collections

build_info = collections.OrderedDict([('cpu_compiler', 'C:/Program Files (x86)/Microsoft Visual Studio/2019/\
Professional/VC/Tools/MSVC/14.29.30133/bin/HostX64/x64/cl.exe'), ('cuda_compute_capabilities', ['compute_50', \
'compute_52', 'compute_60', 'compute_61', 'compute_70', 'compute_75', 'compute_86']), ('cuda_version', '64_116'), \
('cudart_dll_name', 'cudart64_116.dll'), ('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), \
('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', False), ('msvcp_dll_names', \
'msvcp140.dll,msvcp140_1.dll'), ('nvcuda_dll_name', 'nvcuda.dll')])
"""

# NgaAdrain/TEAM_Enter_Text_Here, Show_Program_exe/predictModelUI/tensorflow/python/platform/build_info.py:
# the TF 2.3 plain-dict form (verbatim, licence header left out).
TF_23_BUILD_INFO = """\"\"\"Auto-generated module providing information about the build.\"\"\"
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

build_info = {'cuda_version': '64_101', 'cudnn_version': '64_7', 'cuda_compute_capabilities': ['sm_35', 'sm_37', \
'sm_52', 'sm_60', 'sm_61', 'compute_70'], 'cpu_compiler': 'C:/Program Files (x86)/Microsoft Visual Studio/2019/\
Community/VC/Tools/MSVC/14.26.28801/bin/HostX64/x64/cl.exe', 'is_rocm_build': False, 'is_cuda_build': True, \
'msvcp_dll_names': 'msvcp140.dll,msvcp140_1.dll', 'nvcuda_dll_name': 'nvcuda.dll', 'cudart_dll_name': \
'cudart64_101.dll', 'cudnn_dll_name': 'cudnn64_7.dll'}
"""

# tensorflow 2.15.0 METADATA: the [and-cuda] extra pins NVIDIA wheels (https://pypi.org/project/tensorflow/2.15.0/,
# "Requires-Dist"); a subset of the real list.  The pins match those a public TF 2.15 GPU install script lists
# ("nvidia-cublas-cu12==12.2.5.6 ... nvidia-cudnn-cu12==8.9.4.25 ... nvidia-nccl-cu12==2.16.5").
TF_215_METADATA = """Metadata-Version: 2.1
Name: tensorflow
Version: 2.15.0
Requires-Dist: absl-py >=1.0.0
Requires-Dist: numpy <2.0.0,>=1.23.5
Provides-Extra: and-cuda
Requires-Dist: nvidia-cublas-cu12 ==12.2.5.6 ; extra == 'and-cuda'
Requires-Dist: nvidia-cuda-runtime-cu12 ==12.2.140 ; extra == 'and-cuda'
Requires-Dist: nvidia-cudnn-cu12 ==8.9.4.25 ; extra == 'and-cuda'
Requires-Dist: nvidia-nccl-cu12 ==2.16.5 ; extra == 'and-cuda'
"""

# IvanaXu/TestPaddleA100, paddle/version/__init__.py (head of the generated file, verbatim).
PADDLE_VERSION_PY = """# THIS FILE IS GENERATED FROM PADDLEPADDLE SETUP.PY
#
full_version    = '0.0.0'
major           = '0'
minor           = '0'
patch           = '0'
rc              = '0'
cuda_version    = '11.2'
cudnn_version   = '8.1.1'
istaged         = False
commit          = 'b4a938840967f8e0d59a588a50a77f54f63961c8'
with_mkl        = 'ON'

__all__ = ['cuda', 'cudnn', 'show']

def show():
    if istaged:
        print('full_version:', full_version)
"""

# onnxruntime/capi/version_info.py of an onnxruntime-gpu CUDA 11.8 wheel.  Generated at build time; the
# format (use_cuda, then double-quoted cuda_version / single-digit cudnn_version) is the one the public
# sd-webui-all-in-one env_check parser reads with the regex r'cuda_version\\s*=\\s*"([^"]+)"'.
ORT_GPU_VERSION_INFO = """use_cuda = True

cuda_version = "11.8"
cudnn_version = "8"
"""


def test_torch_cu121_wheel_reports_cuda_and_the_pinned_cudnn_and_nccl_wheels():
    host = site_host({
        "torch/version.py": TORCH_240_CU121_VERSION_PY,
        "torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA,
        "nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA": "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n",
        "torch/lib/libtorch_cuda.so": "",
    })
    t = facts_of(host).get("framework.torch")
    assert t is not None and t.known
    v = t.value
    assert (v["version"], v["public"], v["local"], v["cuda"], v["hip"], v["build"]) == (
        "2.4.0+cu121", "2.4.0", "cu121", "12.1", None, "cuda")
    assert v["git_version"].startswith("e4ee3be4")
    assert v["cudnn_required"]["version"] == "9.1.0.70" and v["cudnn_required"]["from"] == "requires-dist"
    assert v["cudnn_required"]["installed"] == "9.1.0.70"
    # nccl is required but its wheel is missing from site-packages: the user must be told.
    assert v["nccl_required"]["version"] == "2.20.5" and v["nccl_required"]["installed"] is None
    assert v["lib_dir"] == SITE + "/torch/lib"
    assert t.source == "file:" + SITE + "/torch/version.py"
    assert "framework.none" not in facts_of(host)


def test_a_metadata_file_cut_short_is_said_once():
    """A METADATA over the read limit (here torch 2.4.0's with a long description appended) is read that far;
    the report says so, since a requirement past the cut would be missed, and reads the requirements before it."""
    long_metadata = TORCH_240_METADATA + "\n" + "A long description line.\n" * 30000
    host = site_host({
        "torch/version.py": TORCH_240_CU121_VERSION_PY,
        "torch-2.4.0+cu121.dist-info/METADATA": long_metadata,
        "nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA": "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n",
    })
    facts = facts_of(host)
    cut = facts.value("framework.metadata_truncated")
    assert cut == [SITE + "/torch-2.4.0+cu121.dist-info/METADATA is larger than 512 KiB and was read only that far: "
                   "the NVIDIA libraries it requires past that point are not seen"]
    assert facts.value("framework.torch")["cudnn_required"]["version"] == "9.1.0.70"
    whole = site_host({"torch/version.py": TORCH_240_CU121_VERSION_PY,
                       "torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA})
    assert facts_of(whole).get("framework.metadata_truncated") is None


def test_torch_requires_dist_platform_markers_are_honoured_on_aarch64():
    # The same METADATA on an ARM server: none of the nvidia-* markers hold there.
    host = site_host({"torch/version.py": TORCH_240_CU121_VERSION_PY,
                      "torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA}, machine="aarch64")
    v = facts_of(host).value("framework.torch")
    assert v["cudnn_required"] is None and v["nvidia_wheels"] == {}


def test_old_torch_wheel_with_bundled_cudnn():
    host = site_host({"torch/version.py": TORCH_1131_VERSION_PY,
                      "torch-1.13.1+cu116.dist-info/METADATA": "Name: torch\nVersion: 1.13.1+cu116\n"},
                     dirs={"torch/lib": TORCH_CU11X_LIB})
    v = facts_of(host).value("framework.torch")
    assert v["cuda"] == "11.6" and v["build"] == "cuda" and v["local"] == "cu116"
    assert v["cudnn_required"]["from"] == "bundled" and v["cudnn_required"]["version"] == "8"
    assert "libcudnn_ops_infer.so.8" in v["cudnn_required"]["files"]
    assert v["nccl_required"] is None


def test_torch_cpu_wheel():
    host = site_host({"torch/version.py": TORCH_CPU_VERSION_PY,
                      "torch-2.13.0+cpu.dist-info/METADATA": TORCH_CPU_METADATA},
                     dirs={"torch/lib": ["libc10.so", "libgomp.so.1", "libtorch.so", "libtorch_cpu.so"]})
    v = facts_of(host).value("framework.torch")
    assert v["build"] == "cpu" and v["cuda"] is None and v["local"] == "cpu"
    assert v["cudnn_required"] is None and v["nccl_required"] is None


def test_torch_with_garbled_version_py_still_reports_the_version_and_says_why():
    host = site_host({"torch/version.py": TORCH_240_CU121_VERSION_PY[:60] + "\x00\x00 = = (",
                      "torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA})
    v = facts_of(host).value("framework.torch")
    assert v["version"] == "2.4.0+cu121"
    assert "not valid Python" in v["details_error"]
    # The local tag alone still tells the build and CUDA line.
    assert v["build"] == "cuda" and v["cuda"] == "12.1"


def test_torchvision_and_torchaudio_versions_with_local_tags():
    host = site_host({"torch/version.py": TORCH_240_CU121_VERSION_PY,
                      "torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA,
                      "torchvision-0.19.0+cu121.dist-info/METADATA": "Name: torchvision\n",
                      "torchaudio-2.4.0+cu121.dist-info/METADATA": "Name: torchaudio\n"})
    f = facts_of(host)
    assert f.value("framework.torchvision")["local"] == "cu121"
    assert f.value("framework.torchaudio")["public"] == "2.4.0"


def test_tensorflow_linux_build_info_and_and_cuda_wheels():
    host = site_host({"tensorflow/python/platform/build_info.py": TF_LINUX_BUILD_INFO,
                      "tensorflow-2.15.0.dist-info/METADATA": TF_215_METADATA,
                      "nvidia_cudnn_cu12-8.9.4.25.dist-info/METADATA": "Name: nvidia-cudnn-cu12\n",
                      "keras-2.15.0.dist-info/METADATA": "Name: keras\n"})
    f = facts_of(host)
    v = f.value("framework.tensorflow")
    assert (v["version"], v["cuda"], v["cudnn"], v["build"], v["tensorrt"]) == ("2.15.0", "12.3", "8", "cuda", True)
    assert v["compiler"] == "/usr/lib/llvm-17/bin/clang"
    wheels = v["and_cuda_wheels"]
    assert wheels["nvidia-cudnn-cu12"] == {"required": "8.9.4.25", "specifier": "==8.9.4.25", "installed": "8.9.4.25"}
    assert wheels["nvidia-cublas-cu12"]["installed"] is None
    assert f.value("framework.keras")["version"] == "2.15.0"


def test_tensorflow_windows_style_versions_are_normalised():
    host = site_host({"tensorflow/python/platform/build_info.py": TF_291_WIN_BUILD_INFO,
                      "tf_gpu-2.9.1.dist-info/METADATA": "Name: tf-gpu\n",
                      "tensorflow_gpu-2.9.1.dist-info/METADATA": "Name: tensorflow-gpu\n"})
    v = facts_of(host).value("framework.tensorflow")
    assert v["cuda"] == "11.6" and v["cudnn"] == "8" and v["build"] == "cuda"


def test_tensorflow_23_plain_dict_build_info():
    assert python_literals(TF_23_BUILD_INFO)["build_info"]["cuda_version"] == "64_101"
    host = site_host({"tensorflow/python/platform/build_info.py": TF_23_BUILD_INFO,
                      "tensorflow-2.3.0.dist-info/METADATA": "Name: tensorflow\n"})
    v = facts_of(host).value("framework.tensorflow")
    assert v["cuda"] == "10.1" and v["cudnn"] == "7"


def test_two_tensorflow_packages_over_each_other_are_reported():
    host = site_host({"tensorflow/python/platform/build_info.py": TF_LINUX_BUILD_INFO,
                      "tensorflow-2.15.0.dist-info/METADATA": TF_215_METADATA,
                      "tensorflow_cpu-2.15.0.dist-info/METADATA": "Name: tensorflow-cpu\n"})
    f = facts_of(host)
    assert f.value("framework.tensorflow_conflict") == ["tensorflow", "tensorflow-cpu"]


def test_jax_0_4_30_with_cuda12_plugin():
    # jax / jaxlib / jax-cuda12-plugin / jax-cuda12-pjrt 0.4.30 are the four wheels `pip install
    # "jax[cuda12]==0.4.30"` installs (https://pypi.org/project/jax-cuda12-plugin/0.4.30/).
    host = site_host({"jax-0.4.30.dist-info/METADATA": "Name: jax\n",
                      "jaxlib-0.4.30.dist-info/METADATA": "Name: jaxlib\n",
                      "jax_cuda12_plugin-0.4.30.dist-info/METADATA":
                          "Name: jax-cuda12-plugin\nRequires-Dist: jax-cuda12-pjrt==0.4.30\n"
                          "Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.0; extra == \"with_cuda\"\n",
                      "jax_cuda12_pjrt-0.4.30.dist-info/METADATA": "Name: jax-cuda12-pjrt\n"})
    v = facts_of(host).value("framework.jax")
    assert v["version"] == "0.4.30" and v["jaxlib"] == "0.4.30" and v["cuda"] == "12"
    assert v["plugins"] == {"jax-cuda12-pjrt": "0.4.30", "jax-cuda12-plugin": "0.4.30"}
    assert v["plugins_match_jaxlib"] is True and v["build"] == "cuda"
    assert v["nvidia_wheels"]["nvidia-cudnn-cu12"]["required"] == "<10.0,>=9.0"


def test_jax_plugin_that_does_not_match_jaxlib():
    host = site_host({"jax-0.4.31.dist-info/METADATA": "Name: jax\n",
                      "jaxlib-0.4.31.dist-info/METADATA": "Name: jaxlib\n",
                      "jax_cuda12_plugin-0.4.30.dist-info/METADATA": "Name: jax-cuda12-plugin\n"})
    v = facts_of(host).value("framework.jax")
    assert v["plugins_match_jaxlib"] is False and v["mismatched_plugins"] == ["jax-cuda12-plugin 0.4.30"]


def test_old_jaxlib_local_tag_carries_cuda_and_cudnn():
    # jaxlib-0.4.7+cuda11.cudnn86 from https://storage.googleapis.com/jax-releases/jax_cuda_releases.html
    host = site_host({"jax-0.4.7.dist-info/METADATA": "Name: jax\n",
                      "jaxlib-0.4.7+cuda11.cudnn86.dist-info/METADATA": "Name: jaxlib\n"})
    v = facts_of(host).value("framework.jax")
    assert v["cuda"] == "11" and v["cudnn"] == "8.6" and v["plugins_match_jaxlib"] is None


def test_onnxruntime_cpu_and_gpu_installed_together_are_both_reported():
    host = site_host({"onnxruntime-1.18.0.dist-info/METADATA": "Name: onnxruntime\n",
                      "onnxruntime_gpu-1.18.0.dist-info/METADATA": "Name: onnxruntime-gpu\n",
                      "onnxruntime/capi/version_info.py": ORT_GPU_VERSION_INFO})
    f = facts_of(host)
    v = f.value("framework.onnxruntime")
    assert v["packages"] == {"onnxruntime-gpu": "1.18.0", "onnxruntime": "1.18.0"}
    assert v["conflict"] is True and v["gpu"] is True
    assert v["cuda"] == "11.8" and v["cudnn"] == "8"
    assert f.value("framework.onnxruntime_conflict") == ["onnxruntime", "onnxruntime-gpu"]


def test_paddle_gpu_version_file():
    host = site_host({"paddlepaddle_gpu-2.3.0.dist-info/METADATA": "Name: paddlepaddle-gpu\n",
                      "paddle/version/__init__.py": PADDLE_VERSION_PY})
    v = facts_of(host).value("framework.paddle")
    assert v["cuda"] == "11.2" and v["cudnn"] == "8.1.1" and v["build"] == "cuda"
    assert v["commit"].startswith("b4a93884")


def test_cupy_tensorrt_and_mxnet_take_cuda_from_the_package_name():
    host = site_host({"cupy_cuda12x-13.2.0.dist-info/METADATA": "Name: cupy-cuda12x\n",
                      "tensorrt_cu12-10.3.0.dist-info/METADATA": "Name: tensorrt-cu12\n",
                      "tensorrt-10.3.0.dist-info/METADATA": "Name: tensorrt\n",
                      "mxnet_cu112-1.9.1.dist-info/METADATA": "Name: mxnet-cu112\n"})
    f = facts_of(host)
    assert f.value("framework.cupy")["cuda"] == "12"
    assert f.value("framework.tensorrt")["cuda"] == "12" and f.value("framework.tensorrt")["version"] == "10.3.0"
    assert f.value("framework.mxnet")["cuda"] == "11.2" and f.value("framework.mxnet")["legacy"] is True


def test_no_frameworks_at_all_says_so_plainly():
    host = site_host({"requests-2.31.0.dist-info/METADATA": "Name: requests\n"})
    f = facts_of(host)
    none = f.get("framework.none")
    assert none is not None and none.known
    assert "no deep-learning framework" in none.value and "/home/ana/venv/bin/python" in none.value
    assert not [x for x in f if x.key.startswith("framework.") and x.key != "framework.none"]


def test_interpreter_that_cannot_be_asked_gives_unknown_not_a_crash():
    host = make_host(python={"executable": "/opt/broken/bin/python", "version": "", "implementation": "",
                             "prefix": "", "base_prefix": "", "sys_path": [], "error": "unusable",
                             "message": "exit code 127"})
    f = facts_of(host)
    scan = f.get("framework.scan")
    assert scan is not None and scan.status == "unknown" and "/opt/broken/bin/python" in scan.reason


def _wheel_data(name: str) -> str:
    import os

    with open(os.path.join(os.path.dirname(__file__), "data", "wheels", name), encoding="utf-8") as fh:
        return fh.read()


def test_torch_2_14_cuda13_wheels_through_the_cuda_toolkit_meta_package():
    # Real METADATA of torch 2.14.1 (CUDA 13.0, PyPI) and of cuda-toolkit 13.0.3.0: see tests/data/wheels.
    host = site_host({
        "torch/version.py": _wheel_data("torch-2.14.1.version.py"),
        "torch-2.14.1.dist-info/METADATA": _wheel_data("torch-2.14.1.METADATA"),
        "cuda_toolkit-13.0.3.0.dist-info/METADATA": _wheel_data("cuda_toolkit-13.0.3.0.METADATA"),
        "nvidia_cuda_runtime-13.0.96.dist-info/METADATA": "Name: nvidia-cuda-runtime\nVersion: 13.0.96\n",
        "nvidia_cublas-13.0.0.19.dist-info/METADATA": "Name: nvidia-cublas\nVersion: 13.0.0.19\n",
        "nvidia_cudnn_cu13-9.24.0.43.dist-info/METADATA": "Name: nvidia-cudnn-cu13\nVersion: 9.24.0.43\n",
    })
    v = facts_of(host).value("framework.torch")
    assert v["build"] == "cuda" and v["cuda"] == "13.0"
    wheels = v["nvidia_wheels"]
    # torch's own pins, suffixed
    assert wheels["nvidia-cudnn-cu13"] == {"required": "9.24.0.43", "specifier": "==9.24.0.43",
                                           "installed": "9.24.0.43"}
    assert wheels["nvidia-nccl-cu13"] == {"required": "2.30.7", "specifier": "==2.30.7", "installed": None}
    assert v["cudnn_required"]["version"] == "9.24.0.43" and v["nccl_required"]["version"] == "2.30.7"
    # the meta-package itself, and what its extras require (suffix-less CUDA 13 names)
    assert wheels["cuda-toolkit"]["required"] == "13.0.3" and wheels["cuda-toolkit"]["installed"] == "13.0.3.0"
    assert "cudart" in wheels["cuda-toolkit"]["extras"] and "nvcc" not in wheels["cuda-toolkit"]["extras"]
    assert wheels["nvidia-cuda-runtime"]["required"] == "13.0.96.*"
    assert wheels["nvidia-cuda-runtime"]["installed"] == "13.0.96"
    assert wheels["nvidia-cublas"]["installed"] == "13.0.0.19" and wheels["nvidia-cublas"]["required"] == "13.1.1.3.*"
    assert wheels["nvidia-cublas"]["via"].startswith("cuda-toolkit[cublas,cudart,")
    assert "nvidia-cuda-nvcc" not in wheels  # only the extras torch asks for
    assert "nvidia-npp" not in wheels


def test_cuda_toolkit_requirement_without_the_package_installed():
    host = site_host({
        "torch/version.py": _wheel_data("torch-2.14.1.version.py"),
        "torch-2.14.1.dist-info/METADATA": _wheel_data("torch-2.14.1.METADATA"),
    })
    wheels = facts_of(host).value("framework.torch")["nvidia_wheels"]
    assert wheels["cuda-toolkit"]["installed"] is None
    assert not any(w.get("via") for w in wheels.values())


def test_an_nvidia_wheel_that_does_not_satisfy_torch_is_a_finding():
    # The real torch 2.14.1 / cuda-toolkit 13.0.3.0 requirements; cuBLAS 13.0.0.19 (the version torch
    # 2.9's cu130 build pinned) left installed, where cuda-toolkit[cublas] 13.0.3 needs 13.1.1.3.*.
    from envdoctor.checks import CheckContext, run_checks

    host = site_host({
        "torch/version.py": _wheel_data("torch-2.14.1.version.py"),
        "torch-2.14.1.dist-info/METADATA": _wheel_data("torch-2.14.1.METADATA"),
        "cuda_toolkit-13.0.3.0.dist-info/METADATA": _wheel_data("cuda_toolkit-13.0.3.0.METADATA"),
        "nvidia_cuda_runtime-13.0.96.dist-info/METADATA": "Name: nvidia-cuda-runtime\nVersion: 13.0.96\n",
        "nvidia_cublas-13.0.0.19.dist-info/METADATA": "Name: nvidia-cublas\nVersion: 13.0.0.19\n",
        "nvidia_cudnn_cu13-9.24.0.43.dist-info/METADATA": "Name: nvidia-cudnn-cu13\nVersion: 9.24.0.43\n",
    })
    facts = facts_of(host)
    found = [f for f in run_checks(CheckContext(facts, [])) if f.code == "framework.nvidia_wheel_mismatch"]
    assert len(found) == 1, [f.title for f in found]  # runtime 13.0.96, cuDNN, cuda-toolkit itself: satisfied
    f = found[0]
    assert "nvidia-cublas==13.1.1.3.*" in f.title and "13.0.0.19 is installed" in f.title
    assert "cuda-toolkit[cublas," in f.title
    assert f.fix.commands == ["pip install 'nvidia-cublas==13.1.1.3.*'"]


def test_onnxruntime_1_30_cpu_wheel_as_published():
    # Real onnxruntime 1.30.0 CPU wheel (tests/data/wheels): no version_info.py any more, a
    # build_and_package_info.py without cuda_version.
    host = site_host({"onnxruntime-1.30.0.dist-info/METADATA": _wheel_data("onnxruntime-1.30.0.METADATA"),
                      "onnxruntime/capi/build_and_package_info.py":
                          _wheel_data("onnxruntime-1.30.0.build_and_package_info.py")})
    v = facts_of(host).value("framework.onnxruntime")
    assert v["version"] == "1.30.0" and v["gpu"] is False and v["cuda"] is None and v["use_cuda"] is False
    assert v["build_package"] == "onnxruntime" and "details_error" not in v


def test_onnxruntime_gpu_build_info_gives_its_cuda_and_which_package_won_the_directory():
    # The GPU wheel's build_and_package_info.py adds cuda_version (the attribute ORT's own
    # onnxruntime_validation.py reads); here shaped like the real CPU file above.
    gpu_info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.30.0'\ncuda_version = '12.8'\n"
    host = site_host({"onnxruntime_gpu-1.30.0.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.30.0\n",
                      "onnxruntime/capi/build_and_package_info.py": gpu_info})
    v = facts_of(host).value("framework.onnxruntime")
    assert v["gpu"] is True and v["cuda"] == "12.8" and v["use_cuda"] is True
    # Both packages installed, the CPU one last: its build information is what is on disk.
    from envdoctor.checks import CheckContext, run_checks

    host = site_host({"onnxruntime_gpu-1.30.0.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.30.0\n",
                      "onnxruntime-1.30.0.dist-info/METADATA": _wheel_data("onnxruntime-1.30.0.METADATA"),
                      "onnxruntime/capi/build_and_package_info.py":
                          _wheel_data("onnxruntime-1.30.0.build_and_package_info.py")})
    facts = facts_of(host)
    found = [f for f in run_checks(CheckContext(facts, [])) if f.code == "onnxruntime.cpu_and_gpu_installed"]
    assert len(found) == 1 and "the onnxruntime files are in place" in found[0].detail


def test_tensorflow_cpu_2_21_wheel_as_published():
    # Real tensorflow-cpu 2.21.0 wheel (tests/data/wheels): build_info.py says is_cuda_build False.
    host = site_host({"tensorflow/python/platform/build_info.py": _wheel_data("tensorflow_cpu-2.21.0.build_info.py"),
                      "tensorflow_cpu-2.21.0.dist-info/METADATA": _wheel_data("tensorflow_cpu-2.21.0.METADATA")})
    v = facts_of(host).value("framework.tensorflow")
    assert v["version"] == "2.21.0" and v["package"] == "tensorflow-cpu"
    assert v["build"] == "cpu" and v.get("cuda") is None and "details_error" not in v


# `ptxas --version` of CUDA 12.3 (the release triton 2.2.0 bundles: pytorch/pytorch#119054 prints
# triton.common.backend.path_to_ptxas() -> ('.../triton/common/../third_party/cuda/bin/ptxas', '12.3')).
PTXAS_12_3 = ("ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2023 NVIDIA Corporation\n"
              "Built on Wed_Nov_22_10:14:28_PST_2023\nCuda compilation tools, release 12.3, V12.3.107\n"
              "Build cuda_12.3.r12.3/compiler.33567101_0\n")
PTXAS_11_8 = ("ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2022 NVIDIA Corporation\n"
              "Built on Wed_Sep_21_10:31:59_PDT_2022\nCuda compilation tools, release 11.8, V11.8.89\n"
              "Build cuda_11.8.r11.8/compiler.31833905_0\n")


def triton_host(environ: Optional[Dict[str, str]] = None, bundled: str = "triton/third_party/cuda/bin/ptxas",
                answers: Optional[List[Dict[str, object]]] = None, version: str = "2.2.0"):
    files = {SITE + "/torch/version.py": TORCH_240_CU121_VERSION_PY.replace("12.1", "11.8"),
             SITE + "/torch-2.2.0+cu118.dist-info/METADATA": "Name: torch\nVersion: 2.2.0+cu118\n",
             SITE + "/triton-%s.dist-info/METADATA" % version: "Name: triton\nVersion: %s\n" % version,
             SITE + "/" + bundled: "", "/usr/local/cuda-11.8/bin/ptxas": ""}
    return make_host(files=files, environ=environ, commands=answers if answers is not None else [
        {"argv": [SITE + "/" + bundled, "--version"], "stdout": PTXAS_12_3},
        {"argv": ["/usr/local/cuda-11.8/bin/ptxas", "--version"], "stdout": PTXAS_11_8}],
        python={"executable": "/home/ana/venv/bin/python", "version": "3.11.7", "implementation": "cpython",
                "prefix": "/home/ana/venv", "base_prefix": "/usr", "sys_path": [SITE]})


def test_triton_bundled_ptxas_is_found_and_asked_its_version():
    v = facts_of(triton_host()).value("framework.torch.triton")
    assert (v["package"], v["version"], v["from"], v["release"], v["ptxas_version"]) == (
        "triton", "2.2.0", "bundled", "12.3", "12.3.107")
    assert v["ptxas"] == SITE + "/triton/third_party/cuda/bin/ptxas"
    # triton 3.x keeps it under backends/nvidia/bin
    v3 = facts_of(triton_host(bundled="triton/backends/nvidia/bin/ptxas", version="3.0.0")).value(
        "framework.torch.triton")
    assert v3["ptxas"] == SITE + "/triton/backends/nvidia/bin/ptxas" and v3["release"] == "12.3"


def test_triton_ptxas_path_variable_wins_and_a_silent_ptxas_is_unknown():
    forced = facts_of(triton_host(environ={"PATH": "/usr/bin", "TRITON_PTXAS_PATH": "/usr/local/cuda-11.8/bin/ptxas"}))
    v = forced.value("framework.torch.triton")
    assert (v["from"], v["release"], v["ptxas"]) == ("TRITON_PTXAS_PATH", "11.8", "/usr/local/cuda-11.8/bin/ptxas")
    broken = facts_of(triton_host(answers=[{"argv": [SITE + "/triton/third_party/cuda/bin/ptxas", "--version"],
                                            "returncode": 1, "stderr": "cannot execute binary file"}]))
    f = broken.get("framework.torch.triton")
    assert f is not None and not f.known and f.reason


# -- eggs on sys.path, and the plain mxnet package built from source ------------------------------------------

EGG = "/usr/local/lib/python2.7/dist-packages/mxnet-0.5.0-py2.7.egg"


def _egg_host(needed: Optional[List[str]], egg_info: bool = True):
    """Python 2.7 with ``easy_install``'s egg of mxnet 0.5.0 on sys.path (easy-install.pth puts it there)."""
    files = {EGG + "/mxnet/__init__.py": "", EGG + "/mxnet/libmxnet.so": ""}
    if egg_info:
        files[EGG + "/EGG-INFO/PKG-INFO"] = "Metadata-Version: 1.0\nName: mxnet\nVersion: 0.5.0\n"
    host = make_host(files=files, python={
        "executable": "/usr/bin/python2.7", "version": "2.7.6", "implementation": "cpython", "prefix": "/usr",
        "base_prefix": "/usr", "sys_path": ["/usr/lib/python2.7", EGG, "/usr/local/lib/python2.7/dist-packages"]})
    if needed is not None:
        host.doc["elf"] = {EGG + "/mxnet/libmxnet.so": {"soname": "", "needed": needed, "rpath": [], "runpath": []}}
    return type(host)(host.doc)


def test_an_egg_on_sys_path_is_the_distribution_imported_and_its_library_decides_mxnets_build():
    # the egg's libmxnet.so links no CUDA library: PyPI's CPU build or a source build without USE_CUDA
    v = facts_of(_egg_host(["libopenblas.so.0", "libstdc++.so.6", "libc.so.6"])).value("framework.mxnet")
    assert v["version"] == "0.5.0" and v["path"] == EGG and v["build"] == "cpu"
    # a source build with USE_CUDA=1 installed under the plain name links the CUDA runtime and the driver
    v = facts_of(_egg_host(["libcudart.so.7.5", "libcublas.so.7.5", "libcuda.so.1", "libc.so.6"])).value(
        "framework.mxnet")
    assert v["build"] == "cuda" and v["cuda"] == "7.5"
    # its library unread: the package's name decides, as before
    assert facts_of(_egg_host(None)).value("framework.mxnet")["build"] == "cpu"


def test_a_folder_named_like_an_egg_without_egg_info_is_no_distribution():
    f = facts_of(_egg_host(["libc.so.6"], egg_info=False))
    assert f.get("framework.mxnet") is None and f.get("framework.none") is not None

"""A framework's TensorRT integration built against one TensorRT release that loads another of the same major.

TF-TRT loads TensorRT by its soname, ``libnvinfer.so.<major>``, which every release of that major provides; it then
compares the release it loaded (``getInferLibVersion``) with the one it was compiled against (``NV_TENSORRT_MAJOR``,
``MINOR``, ``PATCH`` of its build's NvInfer.h): a lower major is an error ('Incompatible TensorRT library version'),
any other difference a warning ('TensorRT mismatch. Compiled against version 5.0.2, but loaded 5.1.2. Things may not
work'), in ``create_inference_graph`` of tensorflow/contrib/tensorrt/python/trt_convert.py. The release compiled
against is a constant of the wheel's native module, stated in no file of it: it comes from the release's row of
``framework_builds.json`` (``tensorrt_built``); the release loaded, from the library the loader picks for the soname.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable

from ... import versions
from ...findings import Finding, Fix
from ...matrix import builds
from .. import CheckContext, CodeDoc, Message, check
from . import _evidence

TRT_CONVERT = "https://github.com/tensorflow/tensorflow/blob/r1.13/tensorflow/contrib/tensorrt/python/trt_convert.py"


@check("tensorrt-framework-build", requires=("framework.tensorflow", "libraries.loader_choice"),
       reads=("framework.*", "libraries.*"), layers=("libraries",), codes=(
    CodeDoc("tensorrt.framework_built_against_other_release", "warning",
            "A framework's TensorRT integration (TensorFlow's TF-TRT) was compiled against one TensorRT release "
            "and the loader gives it another of the same major through the shared soname (libnvinfer.so.<major>).",
            "framework.tensorflow (its release and build), libraries.loader_choice (the TensorRT the loader picks "
            "for libnvinfer.so.<major>), framework_builds.json (tensorrt_built: the TensorRT the release's PyPI "
            "GPU wheels were compiled against)",
            "TF-TRT compares the two when it converts a graph and warns that things may not work: TensorRT's "
            "behaviour and API differ between minor releases, and engines of one release do not load in another.",
            TRT_CONVERT,
            messages=(Message("TensorRT mismatch. Compiled against version *, but loaded *. Things may not work",
                              TRT_CONVERT),)),
))
def tensorrt_framework_build(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    tf = facts.mapping("framework.tensorflow")
    if tf.get("build") != "cuda" or tf.get("tensorrt") is False or tf.get("local"):
        return  # a CPU build, a build without TensorRT, or not a PyPI wheel (a local label: another build)
    packages = tf.get("packages")
    if isinstance(packages, dict) and packages.get("nvidia-tensorflow"):
        return
    built = builds.tensorflow_tensorrt_built(tf.get("public") or tf.get("version"))
    if built is None:
        return
    compiled, row = built
    soname = "libnvinfer.so." + compiled.split(".")[0]
    found = facts.mapping("libraries.loader_choice").get(soname)
    choice: Dict[str, Any] = found if isinstance(found, dict) else {}
    want, got = versions.parse(compiled), versions.parse(str(choice.get("version") or ""))
    if not choice.get("path") or choice.get("certain") is False or want is None or got is None:
        return  # no TensorRT of that major, or what the loader takes is not known: no verdict
    if got.release[:3] == want.release[:3]:
        return
    loaded = ".".join(str(p) for p in got.release[:3])
    src = row.get("source") or {}
    yield Finding(
        code="tensorrt.framework_built_against_other_release",
        severity="warning",
        components=["tensorrt", "tensorflow"],
        title="TensorFlow %s was built against TensorRT %s, but %s resolves to TensorRT %s (%s)" % (
            tf.get("version"), compiled, soname, loaded, choice.get("resolved") or choice["path"]),
        detail="The PyPI GPU wheels of TensorFlow %s were compiled against TensorRT %s. TF-TRT loads TensorRT "
               "through %s, which every TensorRT %s release provides, and the loader gives it TensorRT %s (through "
               "%s); it compares the two and warns 'TensorRT mismatch. Compiled against version %s, but loaded %s. "
               "Things may not work': TensorRT's behaviour differs between releases, so conversions and engines "
               "may fail or differ." % (tf.get("version"), compiled, soname, compiled.split(".")[0], loaded,
                                        choice.get("via") or "the loader", compiled, loaded),
        evidence=_evidence(facts, "framework.tensorflow", "libraries.loader_choice", "libraries.tensorrt"),
        source={"rule": "TensorFlow %s's PyPI GPU wheels: compiled against TensorRT %s; TF-TRT warns when the "
                        "loaded release differs" % (row.get("releases"), compiled),
                "url": src.get("url", TRT_CONVERT), "checked": src.get("checked", ""),
                "verified": bool(src.get("verified"))},
        fix=Fix(text="Make the TensorRT the loader finds for %s the release TensorFlow %s was built against "
                     "(TensorRT %s), or use a TensorFlow build made for TensorRT %s (NVIDIA's TensorFlow "
                     "containers, or a source build)." % (soname, tf.get("version"), compiled, loaded)))

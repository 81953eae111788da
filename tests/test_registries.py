"""No parallel tables: the registries that list frameworks, OS families and compute capabilities read the
one table of each, and everything a framework plug-in promises exists (its probe reader, its matrix data file,
its recipe). Adding a framework to envdoctor/frameworks/ without the rest fails here (and
tests/test_framework_plugins.py names every list that would not pick it up)."""

from __future__ import annotations

import inspect
import os

import pytest

from envdoctor import findings, frameworks, matrix, osinfo
from envdoctor.frameworks import FRAMEWORKS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("fw", FRAMEWORKS, ids=lambda f: f.name)
def test_every_framework_has_its_probe_data_file_and_recipe(fw):
    from envdoctor.probes import frameworks as probe

    source = inspect.getsource(probe)
    if fw.name in probe.OWN_READERS:  # a reader of its own (the others: probe.plugin_facts, by the plug-in's name)
        assert '"%s"' % fw.display in source, "the probe never reports %s" % fw.display
    else:
        assert fw.companion_of or fw.distributions, "%s: no reader and no distributions to read" % fw.name
    if fw.matrix_area:
        assert fw.matrix_area in matrix.areas(), "no envdoctor/matrix/data/%s.json" % fw.matrix_area
    if fw.recipe:
        from envdoctor.cli.install import SHOWN
        from envdoctor.recipes import RECIPES, load_recipe

        assert fw.recipe in RECIPES and load_recipe(fw.recipe).COMPONENT == fw.recipe
        assert fw.recipe in SHOWN, "install verify shows nothing for %s" % fw.recipe
    if fw.companion_of:
        assert fw.companion_of in frameworks.BY_NAME


def test_every_registry_reads_the_framework_table():
    from envdoctor import advise, layers
    from envdoctor.checks import compat
    from envdoctor.cli.advise import advise as advise_cmd
    from envdoctor.probes import frameworks as probe

    assert set(frameworks.COMPONENTS) <= findings.COMPONENTS
    assert [c for c in findings.LAYERS if c in frameworks.COMPONENTS] == list(frameworks.COMPONENTS)
    assert layers.FRAMEWORK_LAYERS == frameworks.COMPONENTS and layers.COMPANIONS == frameworks.COMPANIONS
    assert [name for name, _ in compat.FRAMEWORKS] == list(frameworks.COMPONENTS)
    assert advise.FRAMEWORKS == frameworks.ADVISED and set(advise.CANDIDATES) == set(frameworks.ADVISED)
    choice = next(p for p in advise_cmd.params if p.name == "frameworks").type
    assert list(choice.choices) == list(frameworks.ADVISED)
    assert probe.FRAMEWORK_NAMES == frameworks.PROBED
    # Every framework a finding may name is a layer of the report.
    assert all(layers.row_of_finding(findings.Finding("x.y", "warning", [c], "t")) == "frameworks"
               for c in frameworks.COMPONENTS)


def test_every_matrix_framework_table_belongs_to_a_framework():
    from envdoctor.matrix import frameworks as matrix_frameworks

    for area in matrix_frameworks.VALIDATORS:
        assert area in {f.matrix_area for f in FRAMEWORKS}, "%s.json has no plug-in in envdoctor/frameworks/" % area


def test_one_os_family_table_and_one_cc_table():
    from envdoctor.probes import gpu, system

    assert not hasattr(system, "FAMILIES") and not hasattr(system, "os_family")
    assert osinfo.family("ol", "fedora") == osinfo.family("oracle") == "rhel"
    assert not hasattr(gpu, "CC_ARCH")
    for row in matrix.load("gpu_arch"):
        assert gpu.architecture_of(row["cc"]) == row["arch"]


def test_every_distribution_the_probe_knows_is_in_the_framework_table():
    """The probe's lists of distributions (which to read first) name only what the descriptor table says
    installs that framework, and the table's CPU-only builds are the probe's CPU-only ones."""

    from envdoctor import frameworks
    from envdoctor.probes import frameworks as probe

    for name in probe.TF_PACKAGES:
        assert frameworks.of_distribution(name).name == "tensorflow", name
    for name in probe.ORT_PACKAGES:
        assert frameworks.of_distribution(name).name == "onnxruntime", name
    for name, fw in (("cupy-cuda12x", "cupy"), ("cupy-cuda110", "cupy"), ("mxnet-cu112", "mxnet"),
                     ("tensorrt-cu12-libs", "tensorrt"), ("paddlepaddle-gpu", "paddle"), ("jaxlib", "jax"),
                     ("Torch", "torch"), ("onnxruntime_gpu", "onnxruntime")):
        assert frameworks.of_distribution(name).name == fw, name
        assert bool(probe._CUPY.match(name)) == (fw == "cupy")
    assert frameworks.cpu_only("onnxruntime") and not frameworks.cpu_only("onnxruntime-gpu")
    assert frameworks.cpu_only("paddlepaddle") and not frameworks.cpu_only("paddlepaddle-gpu")
    assert frameworks.cpu_only("tensorflow-cpu") and not frameworks.cpu_only("tensorflow")
    assert frameworks.cpu_only("mxnet") and not frameworks.cpu_only("mxnet-cu112")
    assert frameworks.of_distribution("numpy") is None

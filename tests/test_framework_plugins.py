"""Frameworks as plug-ins: a framework is one module in envdoctor/frameworks/ (and its data file), and every list
of frameworks in envdoctor derives from the registered set.

The proof: a fictional framework ("MindSpore", with every capability flag set) is dropped into the plug-in
package of a fresh interpreter, its data file into a copy of the matrix's data folder, and every place that lists
frameworks is asked whether it picked it up; the test names each one that did not. (The framework is made up:
nothing here installs or imports it.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from envdoctor import findings, frameworks

from .conftest import HERE

ROOT = os.path.dirname(HERE)

PLUGIN = '''\
"""MindSpore (fictional here: a plug-in written by tests/test_framework_plugins.py)."""

from envdoctor.frameworks import Framework, Install

FRAMEWORK = Framework("mindspore", "MindSpore", True, "mindspore", distributions=r"mindspore(-gpu)?",
                      cpu_distributions="mindspore", order=65, aliases=("ms",), links=True, cudnn_build=True,
                      uses_cudnn=True, dlopen_order=6, arch_lists=True, runtime_compiled=True, glibc=True,
                      nvidia_wheels_field="nvidia_wheels", engine_stack=True, fleet=True, policy_order=65,
                      dependents_of=("mindspore",), extension_libs=r"^libmindspore[a-z_]*\\.so$",
                      extension_dirs=("mindspore/lib",), extension_symbols=r"^_ZN9mindspore",
                      extension_packages=(("mindformers", "mindformers", r".+\\.so"),),
                      cuda_libraries=("mindspore/lib/libmindspore_gpu.so",),
                      abi_libraries=(("mindspore/lib/libmindspore_backend.so",),
                                     ("mindspore/lib/libmindspore_gpu.so",)),
                      dlopens=("cudart", "cublas"), kernel_libraries=(("mindspore/lib", ("libmindspore_gpu*",)),))
'''

#: Its data file (fictional rows, never shipped: written into a copy of the data folder): the envelope every matrix
#: table has, nothing more; a framework needs no validator of its own.
DATA = {"area": "mindspore", "description": "MindSpore (fictional, written by tests/test_framework_plugins.py).",
        "rows": [{"version": "2.3.0", "releases": ">=2.3.0,<2.5", "python": ">=3.8,<3.12", "cuda": ["11.6", "11.8"],
                  "source": {"url": "https://www.mindspore.cn/install/en", "checked": "2026-11-29", "verified": False,
                             "note": "made up for a test: no fact"}}]}

#: Run in a fresh interpreter: register the plug-in before anything reads the lists, then ask every place.
PROBE = textwrap.dedent('''\
    import json, sys
    import envdoctor.frameworks as F
    F.__path__.append(sys.argv[1])
    F.register()
    import envdoctor.matrix as M
    M.DATA_DIR = sys.argv[2]  # the shipped tables and the plug-in's own, all validated in full
    missing = []

    def expect(place, ok):
        if not ok:
            missing.append(place)

    expect("envdoctor.frameworks (the registry)", "mindspore" in F.COMPONENTS)
    from envdoctor import findings, layers
    expect("findings.COMPONENTS (the findings' vocabulary)", "mindspore" in findings.COMPONENTS)
    expect("findings.LAYERS (the stack order of findings)", "mindspore" in findings.LAYERS)
    expect("layers (the report's frameworks layer)", "mindspore" in layers.FRAMEWORK_LAYERS and layers.row_of_finding(
        findings.Finding("x.y", "warning", ["mindspore"], "t")) == "frameworks")
    from envdoctor.report import report_schema
    expect("report schema (components)", "mindspore" in report_schema()["$defs"]["finding"]["properties"][
        "components"]["items"]["enum"])
    from envdoctor.host.schema import first_error
    from envdoctor.report import Report
    from envdoctor.findings import Finding
    said = Report([], [Finding("mindspore.x", "warning", ["mindspore"], "MindSpore 2.3.0 says x")], {"kind": "live",
                  "description": "a test"}, 0.0).to_dict()
    expect("report schema: a report with a finding about it is valid", first_error(said, report_schema()) is None)
    from envdoctor.cli import matrix as cli_matrix
    expect("matrix AREA (the command's areas and aliases)",
           cli_matrix.ALIASES.get("mindspore") == "mindspore" and cli_matrix.ALIASES.get("ms") == "mindspore")
    from envdoctor import matrix
    from envdoctor.matrix import frameworks as matrix_frameworks
    expect("matrix.frameworks.AREAS", "mindspore" in matrix_frameworks.AREAS)
    expect("matrix.VENDORS (whose tables)", matrix.VENDORS.get("mindspore") == "MindSpore")
    expect("matrix: its data file read and valid", "mindspore" in matrix.areas() and matrix.problems_of(
        "mindspore", matrix.read_document("mindspore")) == [] and matrix.load("mindspore")[0]["version"] == "2.3.0")
    from click.testing import CliRunner
    from envdoctor.cli import cli
    listed = CliRunner().invoke(cli, ["matrix", "ms"])
    row = CliRunner().invoke(cli, ["matrix", "mindspore", "2.3.0"])
    expect("envdoctor matrix AREA [VALUE] (its rows, their source)", listed.exit_code == 0 and row.exit_code == 0
           and "mindspore: 1 rows" in listed.output and "not confirmed from MindSpore's tables" in listed.output
           and "mindspore 2.3.0" in row.output and "https://www.mindspore.cn/install/en" in row.output)
    from envdoctor import policy
    expect("policy init (pinned frameworks)", "mindspore" in policy.INIT_FRAMEWORKS)
    from envdoctor import fleet
    expect("fleet (compared facts)", "framework.mindspore" in [what for _, what, _ in fleet.FLEET_FACTS])
    from envdoctor import view
    expect("view (the engine outputs' versions)", "mindspore" in view.FRAMEWORKS)
    from envdoctor.checks import all_checks
    names = [s.name for s in all_checks()]
    expect("checks: framework-linkage", "framework-linkage.mindspore" in names)
    expect("checks: cudnn-version", "cudnn-version.mindspore" in names)
    expect("checks: framework-dlopen", "framework-dlopen.mindspore" in names)
    from envdoctor.checks import compat, frameworks as framework_checks
    from envdoctor.checks.compat import arch_vs_builds
    from envdoctor.checks.libraries import NAMES, cudnn_gpu, wheels
    expect("checks: compat (framework components)", "mindspore" in [n for n, _ in compat.FRAMEWORKS])
    expect("checks: compat.arch-vs-builds", "mindspore" in arch_vs_builds.ARCH_FRAMEWORKS)
    expect("checks: runtime-compiled frameworks", "mindspore" in compat.RUNTIME_COMPILED)
    expect("checks: frameworks.glibc", "mindspore" in framework_checks.GLIBC_FRAMEWORKS)
    expect("checks: libraries (display names)", NAMES.get("mindspore") == "MindSpore")
    expect("checks: cudnn-gpu", "mindspore" in cudnn_gpu._CUDNN_USERS)
    expect("checks: nvidia-wheels", ("mindspore", "nvidia_wheels") in wheels._WHEEL_FIELDS)
    from envdoctor.checks import closure, requires as requires_check
    expect("checks: library-closure", "mindspore" in closure.FRAMEWORKS)
    expect("checks: installed-requirements (NVIDIA pins)", ("mindspore", "nvidia_wheels") in
           requires_check._NVIDIA_PIN_FIELDS)
    from envdoctor.probes import linkage, requires
    expect("probe: requirements (whose dependents)", "mindspore" in requires.FRAMEWORK_KEYS)
    expect("probe: linkage (extension libraries, directories, symbols, packages)",
           linkage.FRAMEWORK_LIB["mindspore"].match("libmindspore_backend.so")
           and linkage.FRAMEWORK_DIRS["mindspore"] == ("mindspore/lib",)
           and linkage.FRAMEWORK_SYMBOL["mindspore"].match("_ZN9mindspore6tensorE")
           and "mindformers" in linkage.EXTENSION_PACKAGES["mindspore"])
    from envdoctor.probes import dlopen, gpucode
    expect("probe: linkage (its CUDA library: linkage.LIBRARIES)",
           linkage.LIBRARIES.get("mindspore") == ("mindspore/lib/libmindspore_gpu.so",))
    expect("probe: linkage (its compiled libraries' version needs: linkage.ABI_LIBRARIES)",
           linkage.ABI_LIBRARIES.get("mindspore") == (("mindspore/lib/libmindspore_backend.so",),
                                                      ("mindspore/lib/libmindspore_gpu.so",)))
    expect("probe: dlopen (what it opens: dlopen.LOADS, in dlopen_order)",
           dlopen.LOADS.get("mindspore") == ("cudart", "cublas") and list(dlopen.LOADS)[-1] == "mindspore")
    expect("probe: gpucode (its kernels: gpucode.KERNEL_LIBRARIES)",
           gpucode.KERNEL_LIBRARIES.get("mindspore") == (("mindspore/lib", ("libmindspore_gpu*",)),))
    from envdoctor.host.base import Distribution
    from envdoctor.probes import frameworks as probe
    expect("probe: what counts as a framework installed", "mindspore" in probe.FRAMEWORK_NAMES)
    read = probe.plugin_facts({"mindspore-gpu": Distribution("mindspore-gpu", "2.3.0", "/site/mindspore_gpu-2.3.0"
                                                                                  ".dist-info", "/site")})
    expect("probe: a plug-in's reader", [(f.key, f.value.get("version"), f.label) for f in read]
           == [("framework.mindspore", "2.3.0", "MindSpore")])
    expect("of_distribution / cpu_only", F.of_distribution("MindSpore_GPU").name == "mindspore"
           and F.cpu_only("mindspore") and not F.cpu_only("mindspore-gpu"))
    print(json.dumps(missing))
''')


def test_a_new_framework_is_one_module_and_its_data_file_and_every_list_picks_it_up(tmp_path):
    from envdoctor import matrix

    (tmp_path / "mindspore.py").write_text(PLUGIN)
    data = tmp_path / "data"
    data.mkdir()
    for name in os.listdir(matrix.DATA_DIR):
        os.symlink(os.path.join(matrix.DATA_DIR, name), str(data / name))
    (data / "mindspore.json").write_text(json.dumps(DATA, indent=1))
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), str(data)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    missing = json.loads(proc.stdout.strip().splitlines()[-1])
    assert missing == [], "these places do not pick up a new framework: " + "; ".join(missing)


def test_the_plugins_are_the_frameworks_and_nothing_lists_them_by_hand():
    names = [f.name for f in frameworks.FRAMEWORKS]
    folder = os.path.join(ROOT, "envdoctor", "frameworks")
    modules = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py")
    assert sorted(names) == modules  # one module per framework, named after it
    assert [f.order for f in frameworks.FRAMEWORKS] == sorted(f.order for f in frameworks.FRAMEWORKS)
    assert len({f.order for f in frameworks.FRAMEWORKS}) == len(names)
    for fw in frameworks.FRAMEWORKS:
        for alias in fw.aliases:
            assert frameworks.BY_NAME.get(alias) is None


def test_the_shipped_report_schema_lists_the_components_this_envdoctor_knows():
    """The schema file (for users' own validators) names the same components as the registry (a new framework:
    add its name to the file's components enum too)."""
    from envdoctor.report import report_schema

    with open(os.path.join(ROOT, "envdoctor", "schemas", "report.schema.json"), encoding="utf-8") as fh:
        shipped = json.load(fh)["$defs"]["finding"]["properties"]["components"]["items"]["enum"]
    derived = report_schema()["$defs"]["finding"]["properties"]["components"]["items"]["enum"]
    assert sorted(shipped) == sorted(derived) == sorted(findings.LAYERS)


#: How the fictional framework is installed, declared as the real ones declare it (``Install``): every field a real
#: plug-in sets is set here too (``test_the_fictional_framework_declares_what_the_real_ones_do`` holds it to that),
#: each to a value that shows whether the recipe read it.
INSTALL = (' advise=True, recipe="mindspore", pip_package="mindspore-gpu", install=Install('
           'label="mindspore", options=("cuda", "image_os", "env", "variant"), with_driver=True, '
           'pip_index="https://wheels.example.org/mindspore", release_range="releases", suggest=1, '
           'local_variant=True, build_fields=(("python_range", "python"),), companion_version="mindspore_lite"), '
           'aliases=')

#: A machine with no NVIDIA driver (tests/machines/debian12-nogpu: a Debian 12 server without a GPU), where
#: ``--with-driver`` plans the driver first
NODRIVER = "debian12-nogpu"

#: Its build hook (``recipes/<recipe>.py``'s ``build_plan``, where a framework's builds need code of their own, as
#: torch's, TensorFlow's and jax's do): the generic build, and a note saying the hook ran.
HOOK = '''\
import sys

from envdoctor import frameworks
from envdoctor.recipes import framework


def build_plan(fw, request, target, facts, opts, row):
    p = framework._pip_build_plan(fw, request, target, facts, opts, row)
    p.notes.append("the mindspore build hook planned this")
    return p


framework.recipe_module(frameworks.BY_NAME["mindspore"], sys.modules[__name__])
'''

#: The same fictional framework, declared installable (``advise=True``, ``recipe``, ``pip_package``): ``envdoctor
#: advise`` and ``envdoctor install mindspore --dry-run`` from its plug-in and data file alone.
INSTALL_PROBE = textwrap.dedent('''\
    import json, sys
    import envdoctor.frameworks as F
    F.__path__.append(sys.argv[1])
    F.register()
    import envdoctor.matrix as M
    M.DATA_DIR = sys.argv[2]
    missing = []
    from envdoctor import advise
    found = advise.candidates("mindspore")
    if [(c.release, c.cuda) for c in found] != [("2.3.0", "11.6"), ("2.2.0", "11.6")]:
        missing.append("advise: its candidates from the data file (advise.plugin_candidates)")
    from envdoctor.recipes import RECIPES, RecipeError, load_recipe
    if "mindspore" not in RECIPES:
        missing.append("recipes.RECIPES (the plug-in's recipe)")
    try:
        load_recipe("mindspore")
    except (ImportError, RecipeError) as exc:
        missing.append("a recipe module serving it (recipes/: %s)" % exc)
    from click.testing import CliRunner
    from envdoctor.cli import cli
    said = CliRunner().invoke(cli, ["advise", "--snapshot", sys.argv[3], "--format", "json"])
    answer = [f for f in json.loads(said.output)["frameworks"]
              if f["framework"] == "mindspore"] if said.exit_code == 0 else []
    if not answer or answer[0].get("command") != 'pip install "mindspore-gpu==2.3.0"':
        missing.append("advise --snapshot (its build judged by install's pre-flight): %s" % (answer or said.output))
    done = CliRunner().invoke(cli, ["install", "mindspore", "--snapshot", sys.argv[3], "--dry-run"])
    planned = ("pip install mindspore-gpu==2.3.0", "install MindSpore 2.3.0 (CUDA 11.6)", "runs with CUDA 11.6, 11.8")
    if done.exit_code != 0 or not all(line in done.output for line in planned):
        missing.append("install mindspore --dry-run (exit %s): %s" % (done.exit_code, done.output[-2000:]))
    other = CliRunner().invoke(cli, ["install", "mindspore", "--version", "2.3.0", "--option", "cuda=11.8",
                                     "--snapshot", sys.argv[3], "--dry-run"])
    if other.exit_code != 0 or "install MindSpore 2.3.0 (CUDA 11.8)" not in other.output:
        missing.append("install mindspore --option cuda=11.8 (a CUDA its row lists): %s" % other.output[-2000:])
    unknown = CliRunner().invoke(cli, ["install", "mindspore", "--option", "cuda=12.4", "--snapshot", sys.argv[3],
                                       "--dry-run"])
    if unknown.exit_code != 2 or "--option cuda=11.8" not in unknown.output:
        missing.append("install mindspore --option cuda=12.4 refused, naming the CUDA it runs with: %s"
                       % unknown.output[-2000:])
    listed = CliRunner().invoke(cli, ["install", "--list", "--os", "ubuntu22.04"])
    if not any(line.split()[:2] == ["mindspore", "pip*,"] for line in listed.output.splitlines()):
        missing.append("install --list")
    # what its plug-in declares (install=Install(...)), each read by the one framework recipe
    def install(*args, machine=sys.argv[3]):
        return CliRunner().invoke(cli, ["install", "mindspore", *args, "--snapshot", machine, "--dry-run"])
    said = install()
    if "--index-url https://wheels.example.org/mindspore/cuda11.6" not in said.output:
        missing.append("install.pip_index (its own index, a folder per variant): %s" % said.output[-2000:])
    said = install("--version", "9.9")
    if said.exit_code != 2 or "mindspore 9.9 is not in the matrix" not in said.output \
            or said.output.count("--version ") != 1:
        missing.append("install.label, install.suggest (a release not in its table): %s" % said.output[-2000:])
    said = install("--version", "2.4.1")
    if said.exit_code != 0 or "mindspore-gpu==2.4.1" not in said.output:
        missing.append("install.release_range (a row covers a range of releases): %s" % said.output[-2000:])
    said = install("--option", "colour=red")
    if said.exit_code != 2 or "(it takes: cuda, image_os, env, variant)" not in said.output:
        missing.append("install.options (the --option keys it takes): %s" % said.output[-2000:])
    recipe = load_recipe("mindspore")
    if recipe.METHODS != ("pip", "conda", "docker") or not any(
            "--with-driver" in a for a in recipe.alternatives(None, None)):
        missing.append("install.methods, install.with_driver (offered when a driver finding refuses the plan)")
    said = install("--with-driver", "--option", "cuda=11.8", machine=sys.argv[4])
    if said.exit_code != 0 or "reboot required afterwards: yes" not in said.output:
        missing.append("install.with_driver (the driver first, where none is installed): %s" % said.output[-2000:])
    from envdoctor.recipes.framework import build_provides
    fact = build_provides("mindspore", found[0])["framework.mindspore"]
    if (fact["version"], fact.get("python_range"), fact.get("mindspore_lite")) != (
            "2.3.0+cuda11.6", ">=3.8,<3.12", "2.3.0"):
        missing.append("install.local_variant, build_fields, companion_version (the facts a plan adds): %s" % fact)
    # a build hook of its own (recipes/<recipe>.py's build_plan), as torch's, TensorFlow's and jax's
    import envdoctor.recipes as R
    R.__path__.append(sys.argv[5])
    del sys.modules["envdoctor.recipes.mindspore"]
    said = install()
    if said.exit_code != 0 or "the mindspore build hook planned this" not in said.output:
        missing.append("recipes/<recipe>.py build_plan (a framework's own build hook): %s" % said.output[-2000:])
    print(json.dumps(missing))
''')


def test_a_new_framework_is_advised_and_installed_from_its_plugin_and_data_file(tmp_path):
    """A100 (tests/machines/pipwheels-ubuntu2204-a100, driver 535): the fictional release's wheel runs with CUDA 11.6
    and 11.8, so advise recommends it and install plans it with pip, the pre-flight's checks judging it."""
    from envdoctor import matrix

    (tmp_path / "mindspore.py").write_text(PLUGIN.replace(" aliases=", INSTALL))
    data = tmp_path / "data"
    data.mkdir()
    for name in os.listdir(matrix.DATA_DIR):
        os.symlink(os.path.join(matrix.DATA_DIR, name), str(data / name))
    older = dict(DATA["rows"][0], version="2.2.0", releases=">=2.2.0,<2.3", cuda=["11.6"])
    (data / "mindspore.json").write_text(json.dumps(dict(DATA, rows=[older] + DATA["rows"]), indent=1))
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "mindspore.py").write_text(HOOK)
    a100 = os.path.join(HERE, "machines", "pipwheels-ubuntu2204-a100", "snapshot.json")
    nodriver = os.path.join(HERE, "machines", NODRIVER, "snapshot.json")
    proc = subprocess.run([sys.executable, "-c", INSTALL_PROBE, str(tmp_path), str(data), a100, nodriver,
                           str(hooks)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    missing = json.loads(proc.stdout.strip().splitlines()[-1])
    assert missing == [], "a new framework does not install from its plug-in alone: " + "; ".join(missing)


def test_the_fictional_framework_declares_what_the_real_ones_do():
    """The fictional framework above proves the one framework recipe reads what the real plug-ins declare: each
    ``Install`` field a real plug-in sets, and the build hook (``recipes/<recipe>.py``'s ``build_plan``) torch,
    TensorFlow and jax have. A field a real plug-in starts to set fails here, naming it, until the test sets it."""
    import importlib.util

    from envdoctor.frameworks import Install

    used = {field for fw in frameworks.FRAMEWORKS if fw.recipe for field in Install._fields
            if getattr(fw.install, field) != Install._field_defaults[field]}
    declared = {field for field in Install._fields if field + "=" in INSTALL}
    assert sorted(used - declared) == [], "the fictional framework's install test does not cover these fields"
    hooked = [fw.recipe for fw in frameworks.FRAMEWORKS
              if fw.recipe and importlib.util.find_spec("envdoctor.recipes." + fw.recipe) is not None]
    assert sorted(hooked) == ["jax", "pytorch", "tensorflow"] and "def build_plan(" in HOOK

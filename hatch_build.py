"""Build hook: make ``envdoctor.recipes`` importable from an editable install.

The wheel maps the top-level ``recipes/`` folder to ``envdoctor/recipes`` (``force-include`` in
pyproject.toml). An editable install has no such copy: it puts the checkout on ``sys.path``, where
``recipes/`` would only be reachable as a top-level ``recipes`` package. This hook adds a ``.pth``
file and a small meta-path finder to the editable wheel that resolve ``envdoctor.recipes`` (and its
submodules, through the package's ``__path__``) to the checkout's ``recipes/`` folder, so the code
imports ``envdoctor.recipes`` the same way in both installs.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

FINDER = '''\
"""envdoctor editable install: import envdoctor.recipes from {recipes!r} (written by hatch_build.py)."""
import importlib.util
import os
import sys

_RECIPES = {recipes!r}


class EnvdoctorRecipesFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "envdoctor.recipes":
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(_RECIPES, "__init__.py"), submodule_search_locations=[_RECIPES])


if not any(getattr(f, "__name__", "") == "EnvdoctorRecipesFinder" for f in sys.meta_path):
    sys.meta_path.append(EnvdoctorRecipesFinder)
'''


class EditableRecipesHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version != "editable":
            return
        out = self._scratch = tempfile.mkdtemp(prefix="envdoctor-editable-")
        finder = os.path.join(out, "_envdoctor_recipes_finder.py")
        with open(finder, "w", encoding="utf-8") as f:
            f.write(FINDER.format(recipes=os.path.join(self.root, "recipes")))
        pth = os.path.join(out, "_envdoctor_recipes.pth")
        with open(pth, "w", encoding="utf-8") as f:
            f.write("import _envdoctor_recipes_finder\n")
        # Replaces the wheel's force-include (a stale copy of recipes/ would otherwise be installed).
        build_data["force_include_editable"][finder] = "_envdoctor_recipes_finder.py"
        build_data["force_include_editable"][pth] = "_envdoctor_recipes.pth"

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)

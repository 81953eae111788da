"""``driver.flatpak_gl_extension_missing``: flatpak apps installed, but no org.freedesktop.Platform.GL.nvidia-<version>
extension of the loaded NVIDIA kernel module's release.

Flatpak's rule (common/flatpak-utils.c, ``flatpak_get_gl_drivers``): unless FLATPAK_GL_DRIVERS is set, the active GL
drivers are ``"nvidia-" + /sys/module/nvidia/version`` with its dots turned into dashes, then ``default`` and ``host``;
the runtime's GL extension point mounts the extension of that name.

Machine: the corpus case rebuilt from https://github.com/flatpak/flatpak/issues/1297 (Linux Mint 18.3, kernel module
384.111 after a driver update, Flathub's Steam with the 1.6 Platform and Compat32, only the GL.nvidia-384-90
extension installed), replayed from its snapshot; each variant changes one thing as the fix or another cause would.
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.checks.driver_health.flatpak_gl import flatpak_driver_name
from tests.conftest import corpus_snapshot, snapshot_findings
from tests.test_graphics_libraries_missing import _add_file, _drop_tree

CASE = "b88e-mint183-driver384111-flatpak-steam-only-gl-nvidia-384-90-extension-none-for-384-111"
CODE = "driver.flatpak_gl_extension_missing"
RUNTIME = "/var/lib/flatpak/runtime"


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _install(doc: Dict[str, Any], ref: str, root: str = RUNTIME) -> None:
    _add_file(doc, "%s/%s/x86_64/1.4/active/metadata" % (root, ref))


def test_flatpak_names_the_nvidia_driver_by_the_module_version_with_dashes() -> None:
    assert flatpak_driver_name("384.111") == "nvidia-384-111"
    assert flatpak_driver_name("550.54.14\n") == "nvidia-550-54-14"


def test_only_the_previous_releases_extension_names_the_missing_one() -> None:
    (f,) = _found(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "384.111" in f.title and "org.freedesktop.Platform.GL.nvidia-384-111" in f.title
    assert "com.valvesoftware.Steam" in f.title
    # Steam's 32-bit part (the Compat32 runtime) takes the GL32 extension too
    assert "org.freedesktop.Platform.GL32.nvidia-384-111" in f.title
    assert "only org.freedesktop.Platform.GL.nvidia-384-90 (for another driver release)" in f.detail
    assert f.fix.commands == ["flatpak update"]
    assert "flatpak-utils.c" in f.source["url"]


def test_quiet_once_the_extensions_of_the_running_release_are_installed() -> None:
    doc = corpus_snapshot(CASE)
    _install(doc, "org.freedesktop.Platform.GL.nvidia-384-111")
    assert [f.title for f in _found(doc)] != []  # GL32 still missing for the 32-bit runtime
    _install(doc, "org.freedesktop.Platform.GL32.nvidia-384-111")
    assert _found(doc) == []


def test_without_a_32bit_runtime_only_the_gl_extension_is_named() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, RUNTIME + "/org.freedesktop.Platform.Compat32")
    (f,) = _found(doc)
    assert "GL32" not in f.title and "GL.nvidia-384-111" in f.title
    _install(doc, "org.freedesktop.Platform.GL.nvidia-384-111")
    assert _found(doc) == []


def test_the_users_own_installation_counts() -> None:
    doc = corpus_snapshot(CASE)
    user = "/home/user/.local/share/flatpak/runtime"
    _install(doc, "org.freedesktop.Platform.GL.nvidia-384-111", user)
    _install(doc, "org.freedesktop.Platform.GL32.nvidia-384-111", user)
    assert _found(doc) == []


def test_quiet_without_flatpak_apps() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/var/lib/flatpak/app")
    assert _found(doc) == []


def test_quiet_when_the_user_chose_the_gl_drivers() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["FLATPAK_GL_DRIVERS"] = "host"
    assert _found(doc) == []


def test_no_nvidia_extension_at_all_is_said_so() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, RUNTIME + "/org.freedesktop.Platform.GL.nvidia-384-90")
    (f,) = _found(doc)
    assert "no NVIDIA GL extension is installed" in f.detail


def test_the_code_is_explained() -> None:
    from envdoctor.checks import code_docs

    docs = code_docs()
    assert docs[CODE].severity == "warning" and "org.freedesktop.Platform.GL.nvidia" in docs[CODE].summary

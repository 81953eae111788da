"""no-cgroups = true in the NVIDIA Container Toolkit's config.toml under the rootful Docker daemon: GPU containers
print 'Failed to initialize NVML: Unknown Error' (corpus: docker-toolkit-no-cgroups-true-rootful-nvml-unknown,
from NVIDIA/nvidia-container-toolkit#381, where the maintainers say the setting is only for rootless containers).
The config.toml text is the one the toolkit package installs (its defaults commented out), as in the corpus case."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes.containers import toolkit_fact, toolkit_settings

CODE = "container-toolkit.no_cgroups_rootful"
CASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus",
                    "docker-toolkit-no-cgroups-true-rootful-nvml-unknown")
PACKAGED = open(os.path.join(CASE, "root/etc/nvidia-container-runtime/config.toml")).read()


def test_settings_are_read_from_their_sections_and_comments_are_not_settings() -> None:
    assert toolkit_settings(PACKAGED) == {"no_cgroups": True, "mode": "auto"}
    default = PACKAGED.replace("\nno-cgroups = true", "\n#no-cgroups = false")
    assert toolkit_settings(default)["no_cgroups"] is None
    assert toolkit_settings(PACKAGED.replace("no-cgroups = true", "no-cgroups = false"))["no_cgroups"] is False
    assert toolkit_settings(PACKAGED.replace('mode = "auto"', 'mode = "cdi"  # CDI'))["mode"] == "cdi"
    # the key in another section is not the hook's setting; garbage reads as unset, never raises
    assert toolkit_settings("[other]\nno-cgroups = true\n")["no_cgroups"] is None
    assert toolkit_settings("[nvidia-container-cli]\nno-cgroups = maybe\n\x00[[\n")["no_cgroups"] is None


def test_the_probe_records_the_setting_from_the_machines_config_toml() -> None:
    host = SnapshotHost(load_snapshot(os.path.join(CASE, "snapshot.json")), validated=True)
    tk = toolkit_fact(host).value
    assert tk["version"] == "1.14.5" and tk["no_cgroups"] is True and tk["mode"] == "auto"


def facts(no_cgroups: Optional[bool] = True, mode: Optional[str] = "auto",
          endpoint: str = "unix:///var/run/docker.sock", in_container: bool = False) -> List[Fact]:
    return [ok("container.toolkit", {"installed": True, "version": "1.14.5", "config_toml": True,
                                     "no_cgroups": no_cgroups, "mode": mode}, "command:nvidia-ctk --version"),
            ok("container.docker", {"installed": True, "client": "25.0.4", "server": "25.0.4", "error": None,
                                    "endpoint": endpoint, "endpoint_source": "default"}, "command:docker version"),
            ok("os.container", "docker" if in_container else None, "derived"),
            ok("gpu.count", 1, "nvml:device_count")]


def run(fs: List[Fact]) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(Facts(fs), []))}


def test_no_cgroups_true_under_the_rootful_daemon_is_reported() -> None:
    f = run(facts())[CODE]
    assert f.severity == "warning" and "no-cgroups = true" in f.title and "Unknown Error" in f.title
    assert any("no-cgroups = false" in c for c in f.fix.commands)
    assert CODE in run(facts(endpoint="unix:///run/docker.sock", mode=None))


@pytest.mark.parametrize("kw", [
    {"no_cgroups": False}, {"no_cgroups": None},                 # the default: cgroups are set up
    {"endpoint": "unix:///run/user/1000/docker.sock"},           # rootless Docker needs no-cgroups = true
    {"mode": "cdi"},                                             # CDI mode does not use the legacy hook
    {"in_container": True},                                      # the host's daemon is not judged from inside
])
def test_quiet_where_the_setting_is_right_or_unused(kw: Dict[str, Any]) -> None:
    assert CODE not in run(facts(**kw))

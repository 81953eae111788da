"""The JSON documents of explain, matrix, advise and install --dry-run hold to their schemas in envdoctor/schemas/
(the MCP server's tools answer with the same documents and announce these schemas as their output)."""

from __future__ import annotations

import glob
import json
import os
from typing import Any

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

jsonschema = pytest.importorskip("jsonschema")
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(os.path.dirname(HERE), "envdoctor", "schemas")


def schema(name: str) -> Any:
    with open(os.path.join(SCHEMAS, name + ".schema.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_explain_every_code() -> None:
    docs = run_json("explain", "--format", "json")
    assert len(docs) > 100
    for doc in docs:
        jsonschema.validate(doc, schema("explain"))
    assert any(doc["messages"] for doc in docs)
    jsonschema.validate(run_json("explain", "gpu.lost", "--format", "json"), schema("explain"))


@pytest.mark.parametrize("area, value", [("cuda", None), ("cuda", "12.4"), ("cudnn", "9.1"), ("gpu", "RTX 4090"),
                                         ("cc", "8.6"), ("torch", None), ("tensorflow", "2.15"), ("jax", None),
                                         ("onnxruntime", None), ("paddle", None), ("cupy", None), ("tensorrt", None),
                                         ("mxnet", None)])
def test_matrix(area: str, value: Any) -> None:
    jsonschema.validate(run_json("matrix", area, *([value] if value else []), "--format", "json"), schema("matrix"))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(HERE, "machines", "*", "snapshot.json"))),
                         ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_advise_every_machine(path: str) -> None:
    jsonschema.validate(run_json("advise", "--snapshot", path, "--format", "json"), schema("advise"))


@pytest.mark.parametrize("args", [("cuda", "--os", "ubuntu22.04"), ("cuda", "--os", "rhel9", "--with-driver"),
                                  ("driver", "--os", "ubuntu24.04"), ("cudnn", "--os", "ubuntu22.04"),
                                  ("container-toolkit", "--os", "rocky8"), ("nccl", "--os", "debian12"),
                                  ("pytorch", "--os", "ubuntu22.04", "--method", "pip")])
def test_install_dry_run(args: Any) -> None:
    jsonschema.validate(run_json("install", *args, "--dry-run", "--format", "json"), schema("plan"))

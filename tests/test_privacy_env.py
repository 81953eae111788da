"""Environment variables in snapshots: no credential value ever reaches the file a user attaches to a
public bug report, every variable's name does, and what the probes read stays as it was."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import REDACTED, Scrubber, is_secret_name, redact_value, scrubber_for
from envdoctor.host.snapshot import SnapshotHost, document_from_host, write_snapshot
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOME = "/home/alice"


def _snapshot(tmp_path, monkeypatch, env, include_host=False):
    """Write a snapshot of a live host whose environment holds ``env``; its text and its ``environ``."""
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("USER", "alice")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    host = LiveHost(timeout=10)
    doc = document_from_host(host, scrubber_for(host, include_host, False), "test")
    path = tmp_path / "snapshot.json"
    write_snapshot(doc, str(path))
    text = path.read_text(encoding="utf-8")
    return text, json.loads(text)["environ"]


def _assert_hidden(text, environ, name, *secrets):
    assert name in environ, "the variable's name stays in the snapshot"
    assert REDACTED in environ[name]
    for secret in secrets:
        assert secret not in text, "%r leaked into the snapshot" % secret


# -- the audit's cases -----------------------------------------------------------

@pytest.mark.parametrize("name, value", [
    ("MYSQL_PWD", "m123"),
    ("SSHPASS", "s234"),
    ("CI_JOB_JWT", "j345"),
    ("DOCKER_PASS", "d456"),
    ("NETRC_PASS", "n012"),
], ids=lambda v: v if v.isupper() else "")  # ids without the values: pytest puts them in PYTEST_CURRENT_TEST
def test_audit_password_variables_are_redacted(tmp_path, monkeypatch, name, value):
    text, environ = _snapshot(tmp_path, monkeypatch, {name: value})
    _assert_hidden(text, environ, name, value)
    assert environ[name] == REDACTED


def test_slash_in_a_proxy_password_does_not_leak(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"HTTPS_PROXY": "http://user:pa/ss999@proxy:3128"})
    _assert_hidden(text, environ, "HTTPS_PROXY", "pa/ss999", "ss999")
    assert environ["HTTPS_PROXY"] == "http://<redacted>@proxy:3128"


def test_at_sign_in_a_proxy_password_does_not_leak(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"http_proxy": "http://user:pa@ss888@proxy:3128"})
    _assert_hidden(text, environ, "http_proxy", "pa@ss888", "ss888")
    assert environ["http_proxy"] == "http://<redacted>@proxy:3128"


def test_token_in_a_query_string_is_redacted_and_its_name_kept(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"HF_ENDPOINT": "https://x/?token=qt123"})
    _assert_hidden(text, environ, "HF_ENDPOINT", "qt123")
    assert environ["HF_ENDPOINT"] == "https://x/?token=<redacted>"


# -- more credentials by name ----------------------------------------------------

@pytest.mark.parametrize("name", [
    "GITHUB_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PGPASSWORD",
    "RSYNC_PASSWORD", "GPG_PASSPHRASE", "WANDB_API_KEY", "OPENAI_APIKEY", "SSH_PRIVATE_KEY", "ADMIN_PW",
    "DB_PASSWD", "AZURE_CLIENT_CREDENTIALS", "SESSION_COOKIE", "SLACK_WEBHOOK", "SENTRY_DSN", "GITLAB_PAT",
    "BASIC_AUTH", "my_lowercase_secret",
])
def test_credential_named_variables_are_redacted(tmp_path, monkeypatch, name):
    text, environ = _snapshot(tmp_path, monkeypatch, {name: "v4lue-of-" + name})
    _assert_hidden(text, environ, name, "v4lue-of-" + name)
    assert environ[name] == REDACTED


def test_secrets_stay_redacted_with_include_host(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"SSHPASS": "s234", "HTTPS_PROXY": "http://u:pa/ss7@p:3128"},
                              include_host=True)
    _assert_hidden(text, environ, "SSHPASS", "s234")
    _assert_hidden(text, environ, "HTTPS_PROXY", "pa/ss7")


# -- credentials in values, whatever the variable is called ----------------------

@pytest.mark.parametrize("param", [
    "token", "access_token", "refresh_token", "key", "api_key", "apikey", "api-key", "sig", "signature", "secret",
    "client_secret", "password", "passwd", "pwd", "auth", "X-Amz-Signature", "X-Amz-Credential",
    "X-Amz-Security-Token", "X-Goog-Signature", "X-Goog-Credential",
])
def test_credential_query_parameters_are_redacted_and_named(tmp_path, monkeypatch, param):
    url = "https://models.example.com/get?alpha=1&%s=qv-%s-99&X-Amz-Expires=3600#top" % (param, param)
    text, environ = _snapshot(tmp_path, monkeypatch, {"MODEL_SOURCE": url})
    _assert_hidden(text, environ, "MODEL_SOURCE", "qv-%s-99" % param)
    assert environ["MODEL_SOURCE"] == (
        "https://models.example.com/get?alpha=1&%s=<redacted>&X-Amz-Expires=3600#top" % param)


def test_presigned_s3_and_azure_sas_urls_keep_everything_but_the_signature(tmp_path, monkeypatch):
    s3 = ("https://bucket.s3.amazonaws.com/w.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256"
          "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request"
          "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=f00dfeed")
    sas = "https://acct.blob.core.windows.net/c/w.bin?sv=2022-11-02&se=2024-01-01&sp=r&sig=s4sSIGvalue%3D"
    text, environ = _snapshot(tmp_path, monkeypatch, {"WEIGHTS_URL": s3, "DATASET_URL": sas})
    _assert_hidden(text, environ, "WEIGHTS_URL", "AKIAIOSFODNN7EXAMPLE", "f00dfeed")
    _assert_hidden(text, environ, "DATASET_URL", "s4sSIGvalue")
    assert "X-Amz-Expires=3600" in environ["WEIGHTS_URL"] and "bucket.s3.amazonaws.com" in environ["WEIGHTS_URL"]
    assert environ["DATASET_URL"].endswith("?sv=2022-11-02&se=2024-01-01&sp=r&sig=<redacted>")


@pytest.mark.parametrize("sep", [",", ";", " ", "\n"])
def test_every_url_of_a_list_loses_its_credentials(tmp_path, monkeypatch, sep):
    value = sep.join(["http://u1:pw1one@h1:3128", "https://h2/simple", "https://u3:pw3th,ree@h3/simple",
                      "https://tok4four@h4/"])
    text, environ = _snapshot(tmp_path, monkeypatch, {"PIP_EXTRA_INDEX_URL": value})
    _assert_hidden(text, environ, "PIP_EXTRA_INDEX_URL", "pw1one", "pw3th", "ree@", "tok4four")
    assert environ["PIP_EXTRA_INDEX_URL"] == sep.join([
        "http://<redacted>@h1:3128", "https://h2/simple", "https://<redacted>@h3/simple", "https://<redacted>@h4/"])


def test_proxy_credentials_without_a_scheme_are_redacted(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"ALL_PROXY": "bob:b4re/pw@proxy.corp:3128"})
    _assert_hidden(text, environ, "ALL_PROXY", "b4re/pw", "bob")
    assert environ["ALL_PROXY"] == "<redacted>@proxy.corp:3128"


@pytest.mark.parametrize("token", [
    "ghp_" + "A1b2C3d4" * 5,
    "gho_" + "Z9y8X7w6" * 5,
    "github_pat_11ABCDEFG0_" + "q1W2e3R4t5" * 6,
    "hf_" + "AbCdEfGhIj" * 4,
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAY34FZKBOKMUTVV7A",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn",
    "sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
], ids=["github", "github-oauth", "github-fine-grained", "huggingface", "aws-key-id", "aws-session-key-id", "slack",
        "gitlab", "openai", "jwt"])
def test_well_known_token_shapes_are_redacted_whatever_the_name(tmp_path, monkeypatch, token):
    text, environ = _snapshot(tmp_path, monkeypatch, {"TRAINING_NOTES": "run with %s please" % token})
    _assert_hidden(text, environ, "TRAINING_NOTES", token)
    assert environ["TRAINING_NOTES"] == "run with <redacted> please"


def test_authorization_headers_keep_their_scheme_only(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {
        "CURL_EXTRA": "-H 'Authorization: token s3cr3tHeader' -H Bearer b3arerT0ken.x",
        "HDR": "Authorization: Basic dXNlcjpwYXNz",
    })
    _assert_hidden(text, environ, "CURL_EXTRA", "s3cr3tHeader", "b3arerT0ken")
    _assert_hidden(text, environ, "HDR", "dXNlcjpwYXNz")
    assert environ["HDR"] == "Authorization: Basic <redacted>"


def test_connection_strings_and_command_line_flags_hide_their_secrets(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {
        "AZURE_STORAGE": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=K3yV4lue==;EndpointSuffix=x",
        "TOOL_OPTS": "--verbose --api-token fl4gT0ken --password=fl4gPw -ccbin /usr/bin/gcc",
    })
    _assert_hidden(text, environ, "AZURE_STORAGE", "K3yV4lue")
    _assert_hidden(text, environ, "TOOL_OPTS", "fl4gT0ken", "fl4gPw")
    assert environ["AZURE_STORAGE"] == ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=<redacted>;"
                                        "EndpointSuffix=x")
    assert environ["TOOL_OPTS"] == "--verbose --api-token <redacted> --password=<redacted> -ccbin /usr/bin/gcc"


def test_private_key_blocks_are_redacted(tmp_path, monkeypatch):
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAk3y\n-----END OPENSSH PRIVATE KEY-----"
    text, environ = _snapshot(tmp_path, monkeypatch, {"DEPLOY_MATERIAL": key})
    _assert_hidden(text, environ, "DEPLOY_MATERIAL", "b3BlbnNzaC1rZXktdjEAAAAAk3y")


# -- what must not change ----------------------------------------------------------

def test_working_directories_are_kept_with_home_and_user_hidden(tmp_path, monkeypatch):
    text, environ = _snapshot(tmp_path, monkeypatch, {"PWD": HOME + "/proj", "OLDPWD": "/data/alice/scratch"})
    assert environ["PWD"] == "~/proj"
    assert environ["OLDPWD"] == "/data/<user>/scratch"
    assert "alice" not in text


def test_non_secret_values_are_unchanged(tmp_path, monkeypatch):
    kept = {
        "PATH": "/usr/local/cuda-12.4/bin:/opt/conda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64:/usr/local/nvidia/lib64:/opt/spack/cuda@12.4/lib",
        "CUDA_HOME": "/usr/local/cuda-12.4",
        "CUDA_PATH": "/usr/local/cuda",
        "CONDA_PREFIX": "/opt/conda/envs/torch",
        "CONDA_DEFAULT_ENV": "torch",
        "PYTHONPATH": "/opt/lib/python",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "CUDA_VISIBLE_DEVICES": "0,1,GPU-12345678-1234-1234-1234-123456789abc",
        "NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/g++-11",
        "NVCC_APPEND_FLAGS": "--keep --keep-dir /tmp/nvcc",
        "CUDAHOSTCXX": "/usr/bin/g++-11",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128",
        "XLA_FLAGS": "--xla_gpu_autotune_level=2 --xla_force_host_platform_device_count=8",
        "NCCL_SOCKET_IFNAME": "eth0",
        "HF_HOME": "/mnt/hf",
        "DOCKER_HOST": "unix:///var/run/docker.sock",
        "DOCKER_CONTEXT": "rootless",
        "CONTAINER_CONNECTION": "podman-machine-default",
        "PIP_INDEX_URL": "https://pypi.org/simple",
        "PIP_FIND_LINKS": "https://github.com/org/repo@v1.0 https://registry.npmjs.org/@scope/pkg",
        "no_proxy": "localhost,127.0.0.1,.corp.example.com",
        "CONTAINER_NAME": "trainer-7",
        "LS_COLORS": "rs=0:di=01;34:ln=01;36:so=01;35:do=01;35:bd=40;33;01:*.tar=01;31",
    }
    in_home = {"VIRTUAL_ENV": HOME + "/proj/.venv"}
    text, environ = _snapshot(tmp_path, monkeypatch, dict(kept, **in_home))
    for name, value in kept.items():
        assert environ[name] == value, name
    assert environ["VIRTUAL_ENV"] == "~/proj/.venv"
    assert environ["HOME"] == "~" and environ["USER"] == "<user>"


def _names_read_by_probes():
    """Every variable name the probes (and the seam's helpers) read (``getenv("X")`` and the names in
    tuples they loop over), from their source."""
    names = set()
    probes = os.path.join(ROOT, "envdoctor", "probes")
    sources = [os.path.join(probes, f) for f in sorted(os.listdir(probes)) if f.endswith(".py")]
    for path in sources + [os.path.join(ROOT, "envdoctor", "host", "base.py")]:  # base: which() reads PATH
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        names.update(re.findall(r"getenv\(\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']", src))
        for loop in re.findall(r"for \w+ in \(([^)]*)\)", src):
            names.update(n for n in re.findall(r"[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']", loop) if n.isupper())
    return names


def test_no_variable_a_probe_reads_is_redacted_by_name():
    # Replaying a snapshot gives the live run's report only if what the probes read is kept as it was.
    names = _names_read_by_probes()
    assert {"PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "NVCC_CCBIN"} <= names
    for name in names | {"HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "CUDA_VISIBLE_DEVICES"}:
        assert not is_secret_name(name), name


@pytest.mark.parametrize("value", [
    "http://user:pa/ss999@proxy:3128", "http://user:pa@ss888@proxy:3128", "https://x/?token=qt123",
    "ssh://core@localhost:53685/run/user/1000/podman/podman.sock", "tcp://10.0.0.5:2376?key=abc&sig=def",
    "https://host:8080/pkg@1.0", "user:pw@proxy:3128", "Authorization: token abc123xyz", "Bearer abcdefghij",
    "--token abc --password=def", "ghp_" + "a1" * 18, "AccountKey=xyz==;Password=p", "http://a:b@h1,https://c:d@h2",
])
def test_redaction_is_idempotent(value):
    # Probes that report a URL redact it with the same rule (containers: DOCKER_HOST); on replay they
    # redact the snapshot's already-redacted value, which must come out the same.
    for name in ("DOCKER_HOST", "CONTAINER_HOST", "ANYTHING"):
        once = redact_value(value, name)
        assert redact_value(once, name) == once


def test_replay_gives_the_same_report_with_secrets_in_the_environment(monkeypatch):
    monkeypatch.setenv("SSHPASS", "s234")
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pa/ss999@proxy:3128")
    monkeypatch.setenv("HF_ENDPOINT", "https://x/?token=qt123")
    monkeypatch.setenv("DOCKER_HOST", "ssh://deploy:pw@build-box:22")
    host = LiveHost(timeout=20)
    scrubber = Scrubber.for_environ(host.environ(), host.nodename())
    report = diagnose(host, scrubber=scrubber)
    doc = json.loads(json.dumps(document_from_host(host, scrubber, "test")))
    replay = diagnose(SnapshotHost(doc, "replay"))

    def facts(r):
        return [(p["name"], p["status"], p["facts"]) for p in r.to_dict()["probes"]]

    assert facts(replay) == facts(report)
    text = json.dumps(doc) + json.dumps(report.to_dict())
    for secret in ("s234", "pa/ss999", "qt123", "deploy:pw"):
        assert secret not in text


# -- end to end --------------------------------------------------------------------

def test_envdoctor_snapshot_command_writes_no_secret(tmp_path):
    secrets = {
        "MYSQL_PWD": "m123-e2e-Qz", "SSHPASS": "s234-e2e-Qz", "CI_JOB_JWT": "j345-e2e-Qz",
        "DOCKER_PASS": "d456-e2e-Qz", "NETRC_PASS": "n012-e2e-Qz", "HF_TOKEN": "hf_e2eSecretValueQz",
        "HTTPS_PROXY": "http://user:pa/ss999e2eQz@proxy:3128", "http_proxy": "http://user:pa@ss888e2eQz@proxy:3128",
        "HF_ENDPOINT": "https://x/?token=qt123e2eQz&api_key=ak-e2eQz", "NOTES": "ghp_" + "E2eQz0" * 6,
    }
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1", **secrets)
    snap = tmp_path / "priv.json"
    r = subprocess.run([sys.executable, "-m", "envdoctor", "snapshot", "-o", str(snap)], capture_output=True,
                       text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = snap.read_text(encoding="utf-8")
    assert "e2eQz" not in text and "e2e-Qz" not in text and "E2eQz" not in text
    environ = json.loads(text)["environ"]
    for name in secrets:
        assert REDACTED in environ[name], name
    assert environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert environ["HF_ENDPOINT"] == "https://x/?token=<redacted>&api_key=<redacted>"


def test_url_credentials_are_removed_from_file_contents_too():
    """Package metadata and tool configs carry credentials in URLs: a direct-URL requirement with a token,
    a docker context reaching a build host over ssh. The snapshot holds files verbatim, so the scrubber
    removes URL user information from every string, with or without --include-host."""
    from envdoctor.host.privacy import Scrubber

    metadata = ("Metadata-Version: 2.1\nName: mylib\nVersion: 1.0\n"
                "Requires-Dist: helper @ git+https://ci-bot:TOKENabc123@github.com/acme/helper.git@v2\n")
    meta_json = '{"Name":"build","Endpoints":{"docker":{"Host":"ssh://alice@build-01.corp.example"}}}'
    doc = {"files": {"/venv/lib/python3.11/site-packages/mylib-1.0.dist-info/METADATA": {"text": metadata},
                     "/home/alice/.docker/contexts/meta/x/meta.json": {"text": meta_json}}}
    for include_host in (False, True):
        out = json.dumps(Scrubber(include_host=include_host)(doc))
        assert "TOKENabc123" not in out and "ci-bot" not in out and "alice@" not in out
        assert "github.com/acme/helper.git@v2" in out and "build-01.corp.example" in out

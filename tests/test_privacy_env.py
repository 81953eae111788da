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
from envdoctor.host.privacy import REDACTED, Scrubber, is_secret_name, redact_environ, redact_value, scrubber_for
from envdoctor.host.snapshot import SnapshotHost, document_from_host, write_snapshot
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOME = "/home/alice"


def _snapshot(tmp_path, monkeypatch, env, include_host=False):
    """Write a snapshot of a live host whose environment holds ``env``; its text and its ``environ``. Every
    variable of ``env`` is read as a probe reads one (``host.getenv``), so the snapshot records its value
    (secrets redacted) and the redaction rules apply; unread ones keep only their names (tested below)."""
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("USER", "alice")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    host = LiveHost(timeout=10)
    for name in env:
        host.getenv(name)
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
    "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8_q-" * 6,  # OpenAI project keys: ~160 characters
    "sk-" + "T3BlbkFJ" + "a1B2c3D4e5" * 4,  # OpenAI legacy keys: sk- and 48 letters and digits
    "sk-ant-api03-" + "Zx9Yw8Vu7T-s6_R" * 6 + "AA",  # Anthropic: ~95 characters after the prefix
    "nvapi-" + "Qw3rTy_uI0-pAsDfGh1jKl" * 3,  # NVIDIA NGC / API catalog: nvapi- and 64
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
], ids=["github", "github-oauth", "github-fine-grained", "huggingface", "aws-key-id", "aws-session-key-id", "slack",
        "gitlab", "openai", "openai-legacy", "anthropic", "nvidia-ngc", "jwt"])
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
    doc = json.loads(text)
    environ, names = doc["environ"], doc.get("environ_names", [])
    for name in secrets:  # no probe reads them: their names only (the rules for recorded values: tests above)
        assert name in names and name not in environ, name
    assert environ["CUDA_VISIBLE_DEVICES"] == "0,1"


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


# -- names that merely look like a token's prefix ------------------------------------

ORDINARY_NAMES = [
    "/opt/envs/sk-learn-gpu-2024-cuda12/bin",  # a conda environment named after scikit-learn
    "/opt/conda/envs/sk-learn-gpu-2024-cuda12-nightly-build-with-extras/lib",  # a long one
    "sk-learn-2024-cuda12", "sk-video-0.1.10", "sk-dist", "task-runner-sk-2024-cuda12-ab12cd34ef56ab78cd90",
    "hf_transfer-0.1.8-cp38-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "hf_xet", "hf_home",
    "npm_config_cache", "github_pat_rotation_script_for_ci_jobs_v2", "glpat-rotation-helper-for-gitlab-ci",
    "gldt-deploy-tooling-for-production-2024", "xoxb-notes", "nvapi-docs", "nvapi-client-python-0.4.2",
    "AKIA-style-key-ids", "eyJ.eyJ.", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
    "pypi-simple-mirror", "ghp_short",
]


@pytest.mark.parametrize("value", ORDINARY_NAMES)
def test_ordinary_names_are_no_token(value):
    # The audit's PATH=/opt/envs/sk-learn-gpu-2024-cuda12/bin:$PATH became /opt/envs/<redacted>/bin.
    assert redact_value(value, "NOTES") == value
    assert Scrubber(include_host=True)({"files": {value: {"text": "x " + value}}}) == {
        "files": {value: {"text": "x " + value}}}


def test_path_variables_keep_everything_but_url_credentials():
    env = {
        "PATH": "/opt/envs/sk-learn-gpu-2024-cuda12/bin:/usr/bin",
        "CONDA_DEFAULT_ENV": "sk-learn-gpu-2024-cuda12",
        "CONDA_PREFIX": "/opt/envs/sk-learn-gpu-2024-cuda12",
        "CONDA_PREFIX_1": "/opt/conda",
        "PYTHONPATH": "/srv/app;key=v1:/srv/lib",  # a directory with a ';' and an '=' in its name
        "LD_LIBRARY_PATH": "/opt/build,token=x86/lib:/opt/x --password=1/lib",
        "CPATH": "/opt/inc --secret a:/usr/include",
        "MANPATH": "/opt/password: man:/usr/share/man",
        "VIRTUAL_ENV": "/srv/auth: x/.venv",
        "CUDA_HOME": "/opt/cuda -u a:b",
        "DOCKER_CONFIG": "/etc/docker password xyz",
        "MY_TOOL_HOME": "/opt/sk-learn-gpu-2024-cuda12",
    }
    out = redact_environ(env)
    assert out == env
    # ... and URL credentials are removed from them too.
    assert redact_environ({"PYTHONPATH": "https://u:pw123@h/x:/opt/lib"}) == {
        "PYTHONPATH": "https://<redacted>@h/x:/opt/lib"}
    # A name that says it holds a credential is redacted whole, whatever it ends with.
    assert redact_environ({"SSH_KEY_PATH": "/home/a/.ssh/id_rsa"}) == {"SSH_KEY_PATH": REDACTED}


def _facts_and_findings(report):
    doc = report.to_dict()
    return ([(p["name"], p["status"], p["facts"]) for p in doc["probes"]], doc["findings"], doc["summary"])


def test_replay_gives_the_same_report_with_token_like_directories_on_path(tmp_path, monkeypatch):
    # A conda environment whose name starts like an OpenAI key, holding the nvcc found first on PATH:
    # the replay used to look for nvcc in /.../envs/<redacted>/bin and report another one.
    env_dir = tmp_path / "envs" / "sk-learn-gpu-2024-cuda12"
    bin_dir = env_dir / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(0o755)
    path = "%s:%s" % (bin_dir, os.environ.get("PATH", "/usr/bin:/bin"))
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("CONDA_PREFIX", str(env_dir))
    monkeypatch.setenv("CONDA_DEFAULT_ENV", env_dir.name)
    monkeypatch.setenv("LD_LIBRARY_PATH", "%s/lib:/srv/app;key=v1" % env_dir)
    host = LiveHost(timeout=20)
    scrubber = Scrubber.for_environ(host.environ(), host.nodename())
    report = diagnose(host, scrubber=scrubber)
    doc = json.loads(json.dumps(document_from_host(host, scrubber, "test")))
    assert doc["environ"]["PATH"] == scrubber.text(path)
    assert doc["environ"]["CONDA_DEFAULT_ENV"] == "sk-learn-gpu-2024-cuda12"
    assert REDACTED not in json.dumps(doc["environ"]["PATH"])
    nvcc_fact = [f for p in report.to_dict()["probes"] for f in p["facts"] if f["key"] == "cuda.nvcc"]
    assert nvcc_fact and nvcc_fact[0]["value"]["path"] == scrubber.text(str(nvcc))
    replay = diagnose(SnapshotHost(doc, "replay"))
    assert _facts_and_findings(replay) == _facts_and_findings(report)


# -- credentials inside values: structured text, command lines --------------------------

@pytest.mark.parametrize("name, value, secrets, expected", [
    ("MY_CFG", '{"password":"JsonPass99","api_token":"tok_JSONSECRET","user":"bob"}', ["JsonPass99", "JSONSECRET"],
     '{"password":"<redacted>","api_token":"<redacted>","user":"bob"}'),
    ("MY_CFG", "{'password': 'PyDictPass2', 'host': 'db'}", ["PyDictPass2"],
     "{'password': '<redacted>', 'host': 'db'}"),
    ("MY_CFG", "user: bob\npassword: YamlPass1\nhost: db", ["YamlPass1"], "user: bob\npassword: <redacted>\nhost: db"),
    ("MY_CFG", "passphrase: correct horse battery staple", ["correct", "horse", "staple"], "passphrase: <redacted>"),
    ("MY_CFG", "[db]\npassword = IniPass7 ; comment", ["IniPass7"], "[db]\npassword = <redacted> ; comment"),
    ("MY_CFG", 'PASSWORD="Quoted Pass5" USER=bob', ["Quoted", "Pass5"], 'PASSWORD="<redacted>" USER=bob'),
    ("MY_CFG", "export API_KEY='Single Quoted6'", ["Single", "Quoted6"], "export API_KEY='<redacted>'"),
    ("MY_CFG", '{"token" => "RubyTok8"}', ["RubyTok8"], '{"token" => "<redacted>"}'),
    ("NETRC", "machine x login bob password NetrcPass", ["NetrcPass"], "machine x login bob password <redacted>"),
    ("CMD", "curl -u admin:CurlPass42 https://x", ["CurlPass42"], "curl -u admin:<redacted> https://x"),
    ("CMD", "curl --user 'admin:Curl Pass43' https://x", ["Curl Pass43", "Pass43"],
     "curl --user 'admin:<redacted>' https://x"),
    ("CMD", "curl -uadmin:CurlPass44 -U proxy:ProxyPass45 https://x", ["CurlPass44", "ProxyPass45"],
     "curl -uadmin:<redacted> -U proxy:<redacted> https://x"),
    ("ALIAS", 'tool --password "Flag Pass46" --verbose', ["Flag Pass46", "Pass46"],
     'tool --password "<redacted>" --verbose'),
    ("ALIAS", "mysql -uroot -pMyPass3 -h db shop", ["MyPass3"], "mysql -uroot -p<redacted> -h db shop"),
    ("ALIAS", "mysqldump -p'My Pass4' shop", ["My Pass4", "Pass4"], "mysqldump -p'<redacted>' shop"),
    ("ALIAS", "sshpass -p SshPass5 ssh -p 2222 host", ["SshPass5"], "sshpass -p <redacted> ssh -p 2222 host"),
    ("ALIAS", "docker login -u bob -p DockerPass6 registry.example", ["DockerPass6"],
     "docker login -u bob -p <redacted> registry.example"),
    ("MY_CFG", '{"password":12345678,"port":5432}', ["12345678"], '{"password":<redacted>,"port":5432}'),
    ("CHANNELS", "https://conda.anaconda.org/t/CONDATOKEN123456/my-channel", ["CONDATOKEN123456"],
     "https://conda.anaconda.org/t/<redacted>/my-channel"),
    ("CHANNELS", "https://repo.anaconda.cloud/t/ab-12cd34ef-5678-90ab/repo/main,https://repo.anaconda.com/t/XyZ987/pkgs",
     ["ab-12cd34ef-5678-90ab", "XyZ987"], "https://repo.anaconda.cloud/t/<redacted>/repo/main,"
     "https://repo.anaconda.com/t/<redacted>/pkgs"),
    ("NOTES", "key " + "nvapi-" + "Qw3rTy_uI0-pAsDfGh1jKl" * 3 + " for NGC",
     ["Qw3rTy_uI0-pAsDfGh1jKl"], "key <redacted> for NGC"),
], ids=["json", "python-dict", "yaml", "yaml-spaces", "ini", "quoted-with-space", "single-quoted", "ruby-hash",
        "netrc", "curl-u", "curl-user-quoted", "curl-glued-and-proxy", "flag-quoted", "mysql-glued", "mysqldump-quoted",
        "sshpass", "docker-login", "json-number", "conda-anaconda-org", "conda-anaconda-cloud-and-com", "ngc"])
def test_credentials_inside_values_are_redacted(tmp_path, monkeypatch, name, value, secrets, expected):
    text, environ = _snapshot(tmp_path, monkeypatch, {name: value})
    _assert_hidden(text, environ, name, *secrets)
    assert environ[name] == expected


@pytest.mark.parametrize("value", [
    "ssh -p2222 build-box", "docker run -p8080:80 -u 1000:1000 img", "pg_dump -p5432 -h db shop",
    "mysql -p shop", "docker login -u bob registry.example", "ssh -p 22 login.example.org",
    "scp -P 2222 a b", "python -u train.py", "https://discuss.example.org/t/cuda-oom/1234",
    "https://github.com/t/x?tab=readme", "Authorization: Basic <redacted>",
    "expandable_segments:True,max_split_size_mb:128", "user: bob\nhost: db",
])
def test_ports_users_and_other_lookalikes_are_kept(value):
    # -pVALUE is a port for everything but MySQL/MariaDB clients, -u UID:GID a docker user, /t/ a
    # forum topic anywhere but on a conda channel host.
    assert redact_value(value, "CMD") == value


@pytest.mark.parametrize("value", [
    '{"password":"JsonPass99"}', "{'password': 'PyDictPass2'}", "password: YamlPass1", "password = a b c",
    "machine x login bob password NetrcPass", "curl -u admin:CurlPass42 https://x", 'PASSWORD="Quoted Pass5"',
    "PASSWORD=\"unterminated value", "mysql -pMyPass3", "https://conda.anaconda.org/t/CONDATOKEN123456/ch",
    "nvapi-" + "a1B2" * 16, "--password 'a b' --token=x", "Authorization: Basic dXNlcjpwYXNz",
    "sshpass -pPw1 ssh h", "docker login -p 'a b' r", '{"password":123}',
    # one redaction making another rule match: a token glued to a URL's scheme, to a flag
    "https://ghp_" + "a1" * 18 + "http://u:p@h/", "}ghp_" + "a1" * 18 + "key--password docker login",
    "https://x/?private_token=p&token=t&sig=s&X-Amz-Signature=z",
])
def test_new_rules_are_idempotent(value):
    for name in ("DOCKER_HOST", "ANYTHING", "PATH"):
        once = redact_value(value, name)
        assert redact_value(once, name) == once
    scrubber = Scrubber(include_host=True)
    once = scrubber.text(value)
    assert scrubber.text(once) == once


# -- file contents and command output ----------------------------------------------------

SECRET_FILE_LINES = {
    "metadata-private-token": (
        "Requires-Dist: x @ https://gitlab.example/api/v4/projects/1/packages/pypi/files/x.whl?private_token=PrivTok123",
        "PrivTok123",
        "Requires-Dist: x @ https://gitlab.example/api/v4/projects/1/packages/pypi/files/x.whl?private_token=<redacted>"),
    "query-token": ("url = 'https://h/dl?alpha=1&token=QueryTok456&b=2'", "QueryTok456",
                    "url = 'https://h/dl?alpha=1&token=<redacted>&b=2'"),
    "access-token": ("see https://h/x?access_token=AccTok789#frag", "AccTok789", "see https://h/x?access_token=<redacted>#frag"),
    "azure-sig": ('"https://a.blob.core.windows.net/c/w?sv=2022-11-02&sig=SasSig%3D"', "SasSig",
                  '"https://a.blob.core.windows.net/c/w?sv=2022-11-02&sig=<redacted>"'),
    "s3-presigned": ("https://b.s3.amazonaws.com/w?X-Amz-Expires=3600&X-Amz-Signature=f00dfeed1234", "f00dfeed1234",
                     "https://b.s3.amazonaws.com/w?X-Amz-Expires=3600&X-Amz-Signature=<redacted>"),
    "conda-meta-url": ('"url": "https://conda.anaconda.org/t/CondaTok42/conda-forge/linux-64/x.conda"', "CondaTok42",
                       '"url": "https://conda.anaconda.org/t/<redacted>/conda-forge/linux-64/x.conda"'),
    "version-py-github": ("__token__ = 'ghp_" + "Vp1Xy2" * 6 + "'", "Vp1Xy2", "__token__ = '<redacted>'"),
    "github-fine-grained": ("token: github_pat_11ABCDEFG0_" + "q1W2e3R4t5" * 6, "q1W2e3R4t5", "token: <redacted>"),
    "huggingface": ("HF token hf_" + "AbCdEfGhIj" * 4 + " set", "AbCdEfGhIj", "HF token <redacted> set"),
    "aws": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = <redacted>"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "AbCdEfGhIjKlMnOp", "<redacted>"),
    "gitlab": ("CI uses glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn.", "Ab1Cd2Ef3Gh4Ij5Kl6Mn", "CI uses <redacted>."),
    "ngc": ("api_key=nvapi-" + "Qw3rTy_uI0-pAsDfGh1jKl" * 3, "Qw3rTy_uI0", "api_key=<redacted>"),
    "jwt": ("Bearer-less eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fw end",
            "SflKxwRJSMeKKF2QT4fw", "Bearer-less <redacted> end"),
    "private-key": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS\n-----END RSA PRIVATE KEY-----\n",
                    "MIIEpAIBAAKCAQEA0Z3VS", "<redacted>\n"),
}


@pytest.mark.parametrize("line, secret, expected", list(SECRET_FILE_LINES.values()), ids=list(SECRET_FILE_LINES))
def test_credentials_are_removed_from_file_contents_and_command_output(line, secret, expected):
    doc = {"files": {"/venv/lib/python3.11/site-packages/x-1.0.dist-info/METADATA": {"text": "Name: x\n" + line}},
           "commands": [{"argv": ["tool", "--version"], "stdout": line, "stderr": ""}]}
    for include_host in (False, True):
        out = Scrubber(home=HOME, user="alice", hostname="gpu-node-7", include_host=include_host)(doc)
        assert secret not in json.dumps(out)
        assert out["files"]["/venv/lib/python3.11/site-packages/x-1.0.dist-info/METADATA"]["text"] == (
            "Name: x\n" + expected)
        assert out["commands"][0]["stdout"] == expected


def test_reports_lose_credentials_with_include_host_too():
    from envdoctor.facts import ok
    from envdoctor.probes import ProbeResult
    from envdoctor.report import scrub

    token = "ghp_" + "Rp0Rt1" * 6
    probe = ProbeResult("python", "Python", [ok("python.note", {"index": "https://h/s?token=Tq1", "t": token},
                                                "file:/x")])
    scrub([probe], Scrubber(include_host=True))
    assert probe.facts[0].value == {"index": "https://h/s?token=<redacted>", "t": REDACTED}


def _raw_document():
    """A snapshot document of this machine, as read: no rule applied to it."""
    class NoScrubber:
        include_host, redact_ids = True, False

        def environ(self, env):
            return dict(env)

        def __call__(self, doc):
            return doc

    host = LiveHost(timeout=20)
    diagnose(host)
    return json.loads(json.dumps(document_from_host(host, NoScrubber(), "test")))


def test_a_real_snapshot_passes_the_scrubber_unchanged():
    # dpkg's status file, os-release, nvcc's output, package metadata, directory listings: nothing in
    # them is a credential, so the credential rules must change none of it (the environment is covered
    # above: this machine's may hold real tokens).
    raw = _raw_document()
    raw.pop("environ")
    assert Scrubber(include_host=True)(raw) == raw
    machines = os.path.join(ROOT, "tests", "machines")
    for name in sorted(os.listdir(machines)):
        path = os.path.join(machines, name, "snapshot.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            assert Scrubber(include_host=True)(doc) == doc, name


def test_a_large_dpkg_like_text_passes_through_unchanged():
    # Every string of a snapshot goes through the rules; a dpkg status file alone is ~650 KB of prose
    # with hundreds of URLs, none of them credentials. (How long it takes is measured, not asserted:
    # about 12 ms for a live 840 KB snapshot on the development VM; these machines are too noisy.)
    stanza = ("Package: libfoo%d\nStatus: install ok installed\nMaintainer: Ubuntu Developers "
              "<ubuntu-devel-discuss@lists.ubuntu.com>\nHomepage: https://foo.example.org/project?lang=en\n"
              "Description: a library for high-throughput disk-based tasks, with the glx helper\n"
              " It integrates with NVIDIA drivers and is used by sk-learn-gpu builds. 日本語\n\n")
    doc = {"files": {"/var/lib/dpkg/status": {"text": "".join(stanza % i for i in range(2500))}}}
    assert Scrubber(home=HOME, user="alice", hostname="gpu-node-7")(doc) == doc


def test_url_scanning_finds_what_the_scheme_pattern_found():
    from envdoctor.host.privacy import _url_starts

    scheme = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
    for value in ["x", "http://a", "git+https://u:p@h/x", "a://b://c", "9abc://x", "://x", " ://x", "a:////b",
                  "s3://b/k http://h,https://g;ftp://f", "-.+://x", "x1.y-z+w://q", "é://x", "http://a://b"]:
        assert _url_starts(value) == [(m.start(), m.end()) for m in scheme.finditer(value)], value


def test_a_variable_no_probe_reads_keeps_its_name_only(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_APP_SETTING", "plainvalue4412")
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "eth7")  # NCCL's: recorded although no probe reads it today
    host = LiveHost(timeout=10)
    host.getenv("CUDA_VISIBLE_DEVICES")
    doc = document_from_host(host, scrubber_for(host, True, False), "test")
    assert "MY_APP_SETTING" in doc["environ_names"] and "MY_APP_SETTING" not in doc["environ"]
    assert "plainvalue4412" not in json.dumps(doc)
    assert doc["environ"]["NCCL_SOCKET_IFNAME"] == "eth7" and "PATH" in doc["environ"]
    replayed = SnapshotHost(json.loads(json.dumps(doc)), "t")
    assert replayed.getenv("MY_APP_SETTING") is None and replayed.getenv("NCCL_SOCKET_IFNAME") == "eth7"


def test_a_host_named_like_a_word_of_envdoctors_vocabulary_keeps_the_report_valid():
    # a SageMaker-style container whose host name is "model": its name is hidden where it names the machine, but
    # fact keys (cpu.model) and finding codes stay as envdoctor wrote them (the report must still match its schema)
    from envdoctor.host.privacy import Scrubber

    scrub = Scrubber.for_environ({"HOSTNAME": "model", "HOME": "/root"}, "model")
    doc = scrub({"facts": [{"key": "cpu.model", "value": "Intel Xeon", "source": "file:/proc/cpuinfo"},
                           {"key": "os.hostname", "value": "model", "source": "uname"}],
                 "findings": [{"code": "gpu.model_unknown", "title": "ssh model failed; see model.log"}]})
    assert [f["key"] for f in doc["facts"]] == ["cpu.model", "os.hostname"]
    assert doc["facts"][1]["value"] == "<hostname>"
    assert doc["findings"][0]["code"] == "gpu.model_unknown"
    assert "ssh <hostname> failed" in doc["findings"][0]["title"]

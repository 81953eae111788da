"""Privacy end to end: 34 planted secrets and identities of every shape the README promises to hide
(credential-named variables incl. SEED/SALT/HMAC/SIG, token shapes, URL credentials, webhook and
secret-path URLs, SSH addresses, Slurm/PBS/HOSTNAME host names short and qualified, and a user name
that only the uid gives away: USER and LOGNAME unset, as under cron, systemd and `docker exec`) must not
appear in any output: diagnose text, JSON and markdown, the snapshot, advise, and fleet over both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from envdoctor.host import privacy
from envdoctor.host.live import LiveHost
from envdoctor.host.snapshot import document_from_host, recorded_variable, write_snapshot
from envdoctor.jsontext import dumps
from envdoctor.render.markdown import render as render_markdown
from envdoctor.render.style import Style
from envdoctor.render.text import render as render_text
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER = "alicplant"  # the name the password database gives for the uid (planted below)

#: name -> value planted in the environment; SECRETS are the parts that must never appear.
PLANTED = {
    "GITHUB_TOKEN": "ghp_4Fq8ZpLk2VbN7xWc9RtY1uJm3HsD5gEa6KoP",
    "HF_TOKEN": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
    "AWS_ACCESS_KEY_ID": "AKIAZ7QPLANTED4KEY99",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIplantedK7MDENGbPxRfiCYEXAMPLEKEY",
    "MY_APP_SEED": "seedplant8812",
    "PASSWORD_SALT": "saltplant4471",
    "WEBHOOK_HMAC": "hmacplant9930",
    "SERVICE_CRED": "credplant1187",
    "PROXY_AUTH": "authplant5521",
    "DOWNLOAD_SIG": "sigplant7713",
    "DB_PASS": "passplant3301",
    "API_KEY": "keyplant6642",
    "CLIENT_SECRET": "secretplant2219",
    "NOTIFY_URL": "https://hooks.slack.com/services/T0PLANT01/B0PLANT02/slackplantXyZ123abcDEF456",
    "ALERTS": "https://discord.com/api/webhooks/998877665544/discordplant_AbCdEf123456GhIjKl",
    "REPORT_TO": "https://reports.example.com/ingest/RpLant7Zq93KxWm2Vb8N/upload",
    "PIP_INDEX_URL": "https://pipuser:pipplantsecret@pypi.example.com/simple",
    "HTTPS_PROXY": "http://proxyuser:proxyplantsecret@proxy.example.com:3128",
    "SENTRY_DSN": "https://dsnplantkey42@o123.ingest.sentry.io/456",
    "DATABASE_URL": "postgres://dbuser:dbplantsecret@db.example.com:5432/app",
    "NGC_CLI_API": "nvapi-PLANTngc1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "OPENAI": "sk-proj-PLANTopenai1234567890abcdefghijklmnopqrstuvwxyzAB",
    "SESSION_JWT_VALUE": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudCJ9.c2lnbmF0dXJlcGxhbnQ",
    "TOOL_ARGS": "--password hunter2plant --verbose",
    "SSH_CONNECTION": "203.0.113.77 51234 198.51.100.23 22",
    "SSH_CLIENT": "203.0.113.77 51234 22",
    "SLURMD_NODENAME": "gpunode-plant017",
    "SLURM_JOB_NODELIST": "gpunode-plant[017-018]",
    "SLURM_SUBMIT_HOST": "submitplant-01",
    "HOSTNAME": "gpunode-plant017.clusterplant.example.org",
    "PBS_O_HOST": "loginplant-03.clusterplant.example.org",
    "VIRTUAL_ENV": "/opt/%s/venv" % USER,
    # Variables whose values a snapshot records (CUDA_*, NVIDIA_*, NCCL_*, LD_*, CONDA_*, paths): the
    # scrubbing rules still apply to them.
    "NVIDIA_API_KEY": "nvapi-PLANTnvidiakey0987654321abcdefghijklmnopqrstuvwxyzABCDEFG",
    "CONDA_CHANNEL_ALIAS": "https://condauser:condaplantsecret@conda.example.com/t/condaplanttok77/main",
    "NCCL_NET_PLUGIN_URL": "https://nccl.example.com/plugin?token=ncclplanttoken55&arch=x86_64",
    "LD_AUDIT_NOTE": "--password ldplantpass12",
    "CUDA_CACHE_PATH": "/home/%s/.nv/ComputeCache" % USER,
}
SECRETS = [
    "ghp_4Fq8ZpLk2VbN7xWc9RtY1uJm3HsD5gEa6KoP", "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890", "AKIAZ7QPLANTED4KEY99",
    "wJalrXUtnFEMIplanted", "seedplant8812", "saltplant4471", "hmacplant9930", "credplant1187", "authplant5521",
    "sigplant7713", "passplant3301", "keyplant6642", "secretplant2219", "slackplantXyZ123abcDEF456", "T0PLANT01",
    "discordplant_AbCdEf123456GhIjKl", "RpLant7Zq93KxWm2Vb8N", "pipplantsecret", "proxyplantsecret",
    "dsnplantkey42", "dbplantsecret", "PLANTngc1234567890", "PLANTopenai1234567890",
    "eyJzdWIiOiJwbGFudCJ9", "hunter2plant", "203.0.113.77", "198.51.100.23", "gpunode-plant017",
    "gpunode-plant018", "submitplant-01", "clusterplant", "loginplant-03", USER,
    "PLANTnvidiakey0987654321", "condaplantsecret", "condaplanttok77", "ncclplanttoken55", "ldplantpass12",
]


@pytest.fixture()
def planted(monkeypatch, tmp_path):
    for name in ("USER", "LOGNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/opt/%s/bin:%s" % (USER, os.environ.get("PATH", "")))
    monkeypatch.setattr(privacy, "uid_user", lambda: USER, raising=False)
    return tmp_path


def _leaks(text):
    return [s for s in SECRETS if s in text]


def test_no_planted_secret_or_identity_reaches_any_output(planted):
    assert len(SECRETS) >= 30
    host = LiveHost(timeout=10, deadline=time.monotonic() + 10)
    report = diagnose(host, deadline=time.monotonic() + 10.5, scrubber=privacy.scrubber_for(host, False, False))
    outputs = {
        "text": render_text(report, Style(color=False), verbose=True),
        "json": dumps(report.to_dict()),
        "markdown": render_markdown(report),
    }
    snap = str(planted / "node-a.json")
    write_snapshot(document_from_host(host, privacy.scrubber_for(host, False, False), "test"), snap)
    with open(snap, encoding="utf-8") as fh:
        outputs["snapshot"] = fh.read()
    with open(str(planted / "node-b.json"), "w", encoding="utf-8") as fh:
        fh.write(outputs["json"])
    nodename = os.uname().nodename
    for name, text in outputs.items():
        assert _leaks(text) == [], name
        if len(nodename) >= 3 and nodename != "localhost":
            assert nodename not in text, name
    # The snapshot still says the variables were there (names kept, values gone): the values of those a
    # probe reads or that CUDA, NVIDIA, NCCL, the loader or conda read (secrets redacted), the names of the rest.
    doc = json.loads(outputs["snapshot"])
    env, names = doc["environ"], doc.get("environ_names", [])
    assert set(PLANTED) <= set(env) | set(names) and not set(env) & set(names)
    assert all(recorded_variable(k) or k in host.environ().read for k in env)
    assert {"NVIDIA_API_KEY", "CONDA_CHANNEL_ALIAS", "NCCL_NET_PLUGIN_URL", "LD_AUDIT_NOTE", "CUDA_CACHE_PATH",
            "VIRTUAL_ENV"} <= set(env) and {"MY_APP_SEED", "GITHUB_TOKEN", "DATABASE_URL"} <= set(names)
    # Commands in their own processes: fleet over the snapshot and the report, and advise (live).
    sub_env = dict(os.environ)
    for args in (["fleet", str(planted), "--format", "json"], ["fleet", str(planted)],
                 ["advise", "--format", "json"], ["advise"], ["diagnose", "--format", "markdown"]):
        r = subprocess.run([sys.executable, "-m", "envdoctor"] + args, env=sub_env, cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode in (0, 1), (args, r.stderr)
        # (In a child process the uid is root's again: every planted secret but the uid's name applies.)
        assert [s for s in _leaks(r.stdout + r.stderr) if s != USER] == [], args


def test_port_at_host_is_an_address_not_a_credential():
    assert privacy.redact_value("27000@licsrv.example.org", "LICENSE_SERVER") == "27000@licsrv.example.org"
    assert privacy.redact_value("user:pw@proxy:3128", "HTTP_PROXY") == "<redacted>@proxy:3128"


def test_ordinary_urls_keep_their_paths():
    for url in ("https://download.pytorch.org/whl/cu121/torch-2.4.0%2Bcu121-cp311-cp311-linux_x86_64.whl",
                "https://pypi.org/simple/nvidia-cudnn-cu12/", "https://developer.download.nvidia.com/compute/cuda/"
                "repos/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb"):
        assert privacy.redact_value(url, "SOME_URL") == url

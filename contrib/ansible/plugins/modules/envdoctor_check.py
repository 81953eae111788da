#!/usr/bin/python
# Copyright: envdoctor developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Ansible module: judge a node against a cluster's envdoctor policy."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: envdoctor_check
short_description: Check a GPU node against a cluster's envdoctor policy
description:
  - Runs C(envdoctor check --policy POLICY --format json) on the node and returns the verdict.
  - The check only reads the machine, so it runs in check mode as well.
version_added: "0.1.0"
author: envdoctor developers
options:
  policy:
    description: Path of the policy (TOML) on the node.
    type: path
    required: true
  snapshot:
    description: Judge this captured snapshot instead of the node itself (for tests and replays).
    type: path
  fail_on:
    description: Override the policy's C([findings] fail_on).
    type: str
    choices: [error, warning, info, never]
  envdoctor:
    description: The command that runs envdoctor, e.g. C(envdoctor) or C(python3 /opt/envdoctor/envdoctor.pyz).
    type: str
    default: envdoctor
  timeout:
    description: Seconds any one probe may take (envdoctor's C(--timeout)).
    type: float
    default: 10
  report_path:
    description: Also write the JSON report here on the node (not in check mode), e.g. to fetch it.
    type: path
  fail_on_policy:
    description: Fail the task when the node does not meet the policy.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the node
  envdoctor.cluster.envdoctor_check:
    policy: /etc/envdoctor/policy.toml
    envdoctor: python3 /opt/envdoctor/envdoctor.pyz
  register: preflight
"""

RETURN = r"""
passed:
  description: The node meets the policy.
  returned: always
  type: bool
summary:
  description: One line, the first failing requirement or finding and how many more ("" when it passes).
  returned: always
  type: str
requirements:
  description: Each requirement with name, want, found, status (pass, fail, unknown) and source.
  returned: always
  type: list
  elements: dict
report:
  description: The whole envdoctor report, with its policy section.
  returned: always
  type: dict
exit_code:
  description: envdoctor's exit code (0 the node meets the policy, 1 it does not).
  returned: always
  type: int
"""

import json
import os
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule


def summary_line(policy):
    bad = [r for r in policy.get("requirements", []) if r.get("status") == "fail"]
    if policy.get("on_unknown", "fail") == "fail":
        bad += [r for r in policy.get("requirements", []) if r.get("status") == "unknown"]
    problems = ["%s: %s, want %s" % (r.get("name"), r.get("found"), r.get("want")) for r in bad]
    problems += list(policy.get("failing_findings", []))
    if not problems:
        return ""
    return problems[0] + (" (+%d more)" % (len(problems) - 1) if len(problems) > 1 else "")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            policy=dict(type="path", required=True),
            snapshot=dict(type="path"),
            fail_on=dict(type="str", choices=["error", "warning", "info", "never"]),
            envdoctor=dict(type="str", default="envdoctor"),
            timeout=dict(type="float", default=10),
            report_path=dict(type="path"),
            fail_on_policy=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    argv = shlex.split(p["envdoctor"]) + ["check", "--policy", p["policy"], "--format", "json",
                                         "--timeout", str(p["timeout"])]
    if p["snapshot"]:
        argv += ["--snapshot", p["snapshot"]]
    if p["fail_on"]:
        argv += ["--fail-on", p["fail_on"]]
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C", "NO_COLOR": "1"})
    if rc not in (0, 1):
        module.fail_json(msg="envdoctor could not run (exit %d): %s" % (rc, (err or out).strip()[-500:]),
                         rc=rc, cmd=argv)
    try:
        report = json.loads(out)
        policy = report["policy"]
    except (ValueError, KeyError, TypeError) as exc:
        module.fail_json(msg="envdoctor printed no report: %s" % exc, rc=rc, stdout=out[-2000:], stderr=err[-2000:])
    if p["report_path"] and not module.check_mode:
        directory = os.path.dirname(os.path.abspath(p["report_path"]))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".envdoctor-report.")
        with os.fdopen(fd, "w") as fh:
            fh.write(out)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p["report_path"])
    result = dict(changed=False, passed=bool(policy.get("passed")), summary=summary_line(policy),
                  requirements=policy.get("requirements", []), report=report, exit_code=rc)
    if not result["passed"] and p["fail_on_policy"]:
        module.fail_json(msg="the node does not meet the policy: %s" % result["summary"], **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

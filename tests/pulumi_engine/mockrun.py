"""Run a rendered Pulumi program under Pulumi's own mock runtime (``pulumi.runtime.set_mocks``)
and print, as JSON, what it registered: every resource (type token, logical name, inputs,
``protect``, ``retain_on_delete``, provider, dependencies) and the stack outputs.

Test infrastructure: no Pulumi CLI, no engine, no cloud. The mock monitor answers each
registration with the inputs plus the few computed attributes the programs read (a service
account's email, a cluster's endpoint); invokes (data sources) answer with plausible values.

Usage: ``python mockrun.py PROGRAM_DIR [--project P --stack S]``; one program per process
(the SDK's runtime settings are process-global).
"""

from __future__ import annotations

import base64
import json
import os
import runpy
import sys
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"
                           ).decode()


class ProgramMocks(pmocks.Mocks):
    """Computed attributes the programs use, derived from the inputs like Google would."""

    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        t = args.typ
        project = state.get("project", "mock-project")
        if t == "gcp:serviceaccount/account:Account":
            email = f"{state['accountId']}@{project}.iam.gserviceaccount.com"
            state.update(email=email, name=f"projects/{project}/serviceAccounts/{email}")
        elif t == "gcp:container/cluster:Cluster":
            state.update(endpoint="203.0.113.10", masterAuth={"clusterCaCertificate": FAKE_CA})
        elif t == "gcp:projects/iAMCustomRole:IAMCustomRole":
            state["name"] = f"projects/{project}/roles/{state['roleId']}"
        elif t == "gcp:hypercomputecluster/cluster:Cluster":
            state["name"] = (f"projects/{project}/locations/{state['location']}/clusters/"
                             f"{state['clusterId']}")
        return f"{args.name}-id", state

    def call(self, args: pmocks.MockCallArgs) -> dict[str, Any]:
        a = dict(args.args)
        if args.token == "gcp:serviceaccount/getAccount:getAccount":
            email = f"{a['accountId']}@{a.get('project')}.iam.gserviceaccount.com"
            return {**a, "email": email, "name": f"projects/{a.get('project')}/serviceAccounts/"
                                                 f"{email}"}
        if args.token == "gcp:compute/getDefaultServiceAccount:getDefaultServiceAccount":
            return {**a, "email": "123456789-compute@developer.gserviceaccount.com"}
        if args.token == "gcp:storage/getBucket:getBucket":
            return {**a, "name": a.get("name")}
        if args.token == "gcp:container/getCluster:getCluster":
            return {**a, "endpoint": "203.0.113.10",
                    "masterAuths": [{"clusterCaCertificate": FAKE_CA}]}
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"accessToken": "mock-token"}
        return a


class RecordingMonitor(pmocks.MockMonitor):
    """The SDK's mock monitor, also keeping each registration's resource options."""

    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[dict[str, Any]] = []
        self.stack_outputs: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            from pulumi.runtime import rpc

            inputs = rpc.deserialize_properties(request.object)
            self.registrations.append({
                "type": request.type, "name": request.name, "urn": response.urn,
                "custom": bool(request.custom), "inputs": _plain(inputs),
                "protect": bool(request.protect),
                "retain_on_delete": bool(request.retainOnDelete),
                "provider": request.provider, "dependencies": sorted(request.dependencies)})
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        from pulumi.runtime import rpc

        if "::pulumi:pulumi:Stack::" in request.urn:
            self.stack_outputs.update(_plain(rpc.deserialize_properties(request.outputs)))
        return super().RegisterResourceOutputs(request)


def _plain(value: Any) -> Any:
    """Inputs as JSON data (secrets unwrapped and marked, unknowns as a marker)."""
    from pulumi.runtime import rpc

    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return {"__secret__": _plain(value.get("value"))}
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def run(program_dir: str, project: str = "mock", stack: str = "mock") -> dict[str, Any]:
    """Run ``program_dir/__main__.py`` under the mocks; returns
    ``{"resources": [...], "outputs": {...}}``."""
    monitor = RecordingMonitor(ProgramMocks())
    pmocks.set_mocks(ProgramMocks(), project=project, stack=stack, preview=False,
                     monitor=monitor)
    main = os.path.join(program_dir, "__main__.py")
    from pulumi.runtime.settings import get_root_resource

    _sync_await(run_pulumi_func(lambda: runpy.run_path(main, run_name="__main__")))
    root = get_root_resource()
    outputs: dict[str, Any] = {}
    if root is not None:
        for key, out in getattr(root, "outputs", {}).items():
            o = pulumi.Output.from_input(out)
            value = _sync_await(o.future())
            secret = _sync_await(o.is_secret())
            outputs[key] = {"value": _plain(value), "sensitive": bool(secret)}
    outputs.update({k: v for k, v in monitor.stack_outputs.items() if k not in outputs})
    return {"resources": monitor.registrations, "outputs": outputs}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1]), indent=1, sort_keys=True))

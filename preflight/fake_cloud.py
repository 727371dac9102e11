"""Pulumi mocks that play the cloud: echo inputs and add recognisably fake computed outputs.

Every value the cloud would compute (ids, self links, endpoints, IPs, emails) gets a fake
that is obviously not real: IPs come from the documentation ranges 192.0.2.0/24 and
203.0.113.0/24, numbers are 000000000000, and certificates decode to `FAKE`. A preflight
run never pretends to know what GCP will return.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pulumi

FAKE_PROJECT_NUMBER = "000000000000"
FAKE_ENDPOINT = "203.0.113.10"
FAKE_LUSTRE_IP = "192.0.2.10"
FAKE_CA = base64.b64encode(b"FAKE CERTIFICATE - preflight").decode()
_COMPUTE = "https://www.googleapis.com/compute/v1/"

Outputs = dict[str, Any]


class FakeCloud(pulumi.runtime.Mocks):
    """Mocks for every resource and invoke the program uses."""

    def __init__(self, project: str, region: str, zone: str) -> None:
        self.project = project
        self.region = region
        self.zone = zone
        self._computers: dict[str, Callable[[str, Outputs], str]] = {
            "gcp:compute/network:Network": self._network,
            "gcp:compute/subnetwork:Subnetwork": self._subnetwork,
            "gcp:compute/firewall:Firewall": self._firewall,
            "gcp:compute/router:Router": self._router,
            "gcp:compute/routerNat:RouterNat": self._router_nat,
            "gcp:compute/globalAddress:GlobalAddress": self._global_address,
            "gcp:container/cluster:Cluster": self._cluster,
            "gcp:container/nodePool:NodePool": self._node_pool,
            "gcp:serviceaccount/account:Account": self._service_account,
            "gcp:lustre/instance:Instance": self._lustre,
            "gcp:storage/bucket:Bucket": self._bucket,
            "gcp:servicenetworking/connection:Connection": self._psa_connection,
        }

    # --- pulumi.runtime.Mocks ---------------------------------------------------------

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[Any, Any]]:
        """Echo the inputs, then add the outputs the provider would compute."""
        outputs: Outputs = dict(args.inputs)
        compute = self._computers.get(args.typ)
        if compute is not None:
            return compute(args.name, outputs), outputs
        if args.typ.startswith("kubernetes:"):
            return self._kubernetes(args.name, outputs), outputs
        return f"fake-id-{args.name}", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[Any, Any]:  # type: ignore[override]
        """Answer the invokes the program makes."""
        if args.token == "gcp:organizations/getProject:getProject":  # noqa: S105 - a token name
            project = args.args.get("projectId") or self.project
            return {"projectId": project, "number": FAKE_PROJECT_NUMBER, "name": project}
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":  # noqa: S105
            return {
                "project": self.project,
                "region": self.region,
                "zone": self.zone,
                "accessToken": "fake-access-token",
                "id": "fake",
            }
        return {}

    # --- per-type computed outputs ----------------------------------------------------

    def _named(self, name: str, outputs: Outputs) -> str:
        # Auto-naming is the provider plugin's job; without it a GCP name is the logical one.
        value = outputs.setdefault("name", name)
        return str(value)

    def _global(self, kind: str, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        project = outputs.get("project") or self.project
        rid = f"projects/{project}/global/{kind}/{gcp_name}"
        outputs["selfLink"] = _COMPUTE + rid
        return rid

    def _regional(self, kind: str, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        project = outputs.get("project") or self.project
        region = outputs.get("region") or self.region
        rid = f"projects/{project}/regions/{region}/{kind}/{gcp_name}"
        outputs["selfLink"] = _COMPUTE + rid
        return rid

    def _network(self, name: str, outputs: Outputs) -> str:
        return self._global("networks", name, outputs)

    def _subnetwork(self, name: str, outputs: Outputs) -> str:
        outputs.setdefault("gatewayAddress", "192.0.2.1")
        return self._regional("subnetworks", name, outputs)

    def _firewall(self, name: str, outputs: Outputs) -> str:
        return self._global("firewalls", name, outputs)

    def _router(self, name: str, outputs: Outputs) -> str:
        return self._regional("routers", name, outputs)

    def _router_nat(self, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        project = outputs.get("project") or self.project
        return f"{project}/{self.region}/{outputs.get('router')}/{gcp_name}"

    def _global_address(self, name: str, outputs: Outputs) -> str:
        outputs.setdefault("address", "192.0.2.0")
        return self._global("addresses", name, outputs)

    def _psa_connection(self, name: str, outputs: Outputs) -> str:
        outputs.setdefault("peering", "servicenetworking-googleapis-com")
        return f"{outputs.get('network')}:{outputs.get('service')}"

    def _cluster(self, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        location = outputs.get("location") or self.region
        outputs["endpoint"] = FAKE_ENDPOINT
        outputs["masterAuth"] = {"clusterCaCertificate": FAKE_CA}
        outputs.setdefault("masterVersion", "1.35.0-gke.0")
        outputs["selfLink"] = (
            f"https://container.googleapis.com/v1/projects/{self.project}/locations/{location}"
            f"/clusters/{gcp_name}"
        )
        return f"projects/{self.project}/locations/{location}/clusters/{gcp_name}"

    def _node_pool(self, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        outputs.setdefault("instanceGroupUrls", [])
        return f"{outputs.get('location')}/{outputs.get('cluster')}/{gcp_name}"

    def _service_account(self, name: str, outputs: Outputs) -> str:
        account = outputs.get("accountId") or name
        project = outputs.get("project") or self.project
        email = f"{account}@{project}.iam.gserviceaccount.com"
        outputs["email"] = email
        outputs["member"] = f"serviceAccount:{email}"
        outputs["name"] = f"projects/{project}/serviceAccounts/{email}"
        outputs["uniqueId"] = "000000000000000000000"
        return str(outputs["name"])

    def _lustre(self, name: str, outputs: Outputs) -> str:
        instance = outputs.get("instanceId") or name
        location = outputs.get("location") or self.zone
        outputs["mountPoint"] = f"{FAKE_LUSTRE_IP}@tcp:/{outputs.get('filesystem', 'lustrefs')}"
        outputs["state"] = "ACTIVE"
        outputs["name"] = f"projects/{self.project}/locations/{location}/instances/{instance}"
        return str(outputs["name"])

    def _bucket(self, name: str, outputs: Outputs) -> str:
        bucket = self._named(name, outputs)
        outputs["url"] = f"gs://{bucket}"
        outputs["selfLink"] = f"https://www.googleapis.com/storage/v1/b/{bucket}"
        return bucket

    def _kubernetes(self, name: str, outputs: Outputs) -> str:
        metadata = outputs.get("metadata")
        if isinstance(metadata, dict):
            namespace = metadata.get("namespace")
            obj_name = metadata.get("name") or name
            return f"{namespace}/{obj_name}" if namespace else str(obj_name)
        return name

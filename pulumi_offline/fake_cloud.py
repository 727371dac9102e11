"""Pulumi mocks that play the cloud: echo inputs and add recognisably fake computed outputs.

Follows what pulumi-gcp 10.2.0 returns from a create (and from the reads the program makes),
under the mocks of the Pulumi Python SDK 3.272.0 the project locks. Every value the cloud
would compute (ids, self links, endpoints, IPs, emails) gets a fake that is obviously not
real: IPs come from the documentation ranges 192.0.2.0/24 and 203.0.113.0/24, numbers are
000000000000, and certificates decode to `FAKE`. A preflight run never pretends to know what
GCP will return.

It cannot prove that Google's APIs accept a request or that a real resource reads back with
these ids and links: their shapes follow the APIs' documented forms, their values are made up.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.runtime.rpc import UNKNOWN

from planning import resource_types as rt
from pulumi_offline import fake_reservations
from pulumi_offline.cloud_outputs import CLOUD_FILLED, plan_known
from pulumi_offline.fake_reservations import CloudFixtures

FAKE_PROJECT_NUMBER = "000000000000"
FAKE_ENDPOINT = "203.0.113.10"
FAKE_DNS_ENDPOINT = "gke-00000000000000000000000000000000-000000000000.{region}.gke.goog"
"""GKE's DNS-based endpoint has this shape (`gke-<id>-<project number>.<region>.gke.goog`);
zeros, like the fake project number, so nobody mistakes it for a real one."""
FAKE_LUSTRE_IP = "192.0.2.10"
FAKE_CA = base64.b64encode(b"FAKE CERTIFICATE - preflight").decode()
_COMPUTE = "https://www.googleapis.com/compute/v1/"

Outputs = dict[str, Any]


def preview_outputs(inputs: Outputs, computed: Outputs, token: str = "") -> Outputs:
    """What a provider returns from a create during preview: inputs, computed values unknown
    (those the fake computes, and every other output the cloud fills for `token`)."""
    result: Outputs = {key: UNKNOWN for key in CLOUD_FILLED.get(token, ()) if key not in inputs}
    for key, value in computed.items():
        given = inputs.get(key)
        if key in inputs and given == value:
            result[key] = value
        elif isinstance(given, dict) and isinstance(value, dict):
            result[key] = preview_outputs(given, value)
        else:
            result[key] = UNKNOWN
    return result


class FakeCloud(pulumi.runtime.Mocks):
    """Mocks for every resource and invoke the program uses.

    `compute_outputs` is also what the engine test bed's GCP stand-in provider returns from
    `create`; it passes the local control plane's address and CA as `endpoint` / `ca`.
    """

    def __init__(
        self,
        project: str,
        region: str,
        zone: str,
        *,
        endpoint: str = FAKE_ENDPOINT,
        ca: str = FAKE_CA,
        dns_endpoint: str | None = None,
        fixtures: CloudFixtures | None = None,
        preview: bool = False,
        previous_outputs: dict[str, Any] | None = None,
    ) -> None:
        self.project = project
        self.previous_outputs = dict(previous_outputs or {})
        """What `readStackOutputs` answers for the stack itself: the outputs of its last
        deployment (empty: a stack never deployed)."""
        self.region = region
        self.zone = zone
        self.endpoint = endpoint
        self.ca = ca
        self.dns_endpoint = dns_endpoint
        """The cluster's DNS name; default FAKE_DNS_ENDPOINT in the cluster's region."""
        self.fixtures = fixtures or CloudFixtures()
        """The reservations and existing clusters it knows (none: every read is a 404)."""
        self.preview = preview
        """Answer as a first `pulumi preview` does: computed values (and every output of a
        Kubernetes resource, whose provider's kubeconfig is not known yet) are unknown."""
        self._computers: dict[str, Callable[[str, Outputs], str]] = {
            rt.NETWORK: self._network,
            rt.SUBNETWORK: self._subnetwork,
            rt.FIREWALL: self._firewall,
            rt.ROUTER: self._router,
            rt.ROUTER_NAT: self._router_nat,
            rt.GLOBAL_ADDRESS: self._global_address,
            rt.CLUSTER: self._cluster,
            rt.NODE_POOL: self._node_pool,
            rt.SERVICE_ACCOUNT: self._service_account,
            rt.LUSTRE: self._lustre,
            rt.BUCKET: self._bucket,
            rt.PSA_CONNECTION: self._psa_connection,
            rt.PROJECT_IAM_MEMBER: self._project_iam_member,
            rt.BUCKET_IAM_MEMBER: self._bucket_iam_member,
        }

    # --- pulumi.runtime.Mocks ---------------------------------------------------------

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[Any, Any]]:
        """Echo the inputs, then add the outputs the provider would compute."""
        outputs: Outputs = dict(args.inputs)
        resource_id = self.compute_outputs(args.typ, args.name, outputs)
        planned = plan_known(args.typ, args.inputs, self.project)
        if not self.preview:
            return resource_id, {**planned, **outputs}
        if args.typ.startswith("kubernetes:"):
            # The engine hands back no state for a resource whose provider's configuration
            # is unknown (pkg/resource/plugin/provider_plugin.go, Create during preview).
            return "", {}
        return "", {**preview_outputs(dict(args.inputs), outputs, args.typ), **planned}

    def compute_outputs(self, typ: str, name: str, outputs: Outputs) -> str:
        """Add the outputs a create of `typ` computes to `outputs` (inputs); return the id."""
        compute = self._computers.get(typ)
        if compute is not None:
            return compute(name, outputs)
        if typ.startswith("kubernetes:"):
            return self._kubernetes(name, outputs)
        return f"fake-id-{name}"

    def call(  # type: ignore[override]
        self, args: pulumi.runtime.MockCallArgs
    ) -> dict[Any, Any] | tuple[dict[Any, Any], list[tuple[str, str]]]:
        """Answer the invokes the program makes; a read of something that is not there fails
        the invoke, as a provider's 404 does (the program's invoke raises)."""
        try:
            return self.call_result(args.token, dict(args.args))
        except fake_reservations.NotFoundError as error:
            return {}, [("name", str(error))]

    def call_result(self, token: str, args: dict[str, Any]) -> dict[str, Any]:
        """What an invoke returns (the fields the program reads)."""
        if token == rt.READ_STACK_OUTPUTS:
            return {
                "name": args.get("name"),
                "outputs": self.previous_outputs,
                "secretOutputNames": [],
            }
        if token == rt.GET_PROJECT:
            project = args.get("projectId") or self.project
            return {"projectId": project, "number": FAKE_PROJECT_NUMBER, "name": project}
        if token in fake_reservations.TOKENS:
            return fake_reservations.answer(self.fixtures, token, args, self.project)
        if token == rt.GET_CLIENT_CONFIG:
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

    def _psa_connection(self, name: str, outputs: Outputs) -> str:  # noqa: ARG002 - id rule
        outputs.setdefault("peering", "servicenetworking-googleapis-com")
        return f"{outputs.get('network')}:{outputs.get('service')}"

    def _cluster(self, name: str, outputs: Outputs) -> str:
        gcp_name = self._named(name, outputs)
        location = outputs.get("location") or self.region
        outputs["endpoint"] = self.endpoint
        master_auth = outputs.get("masterAuth")
        outputs["masterAuth"] = {
            **(master_auth if isinstance(master_auth, dict) else {}),
            "clusterCaCertificate": self.ca,
        }
        outputs.setdefault("masterVersion", "1.35.0-gke.0")
        # GKE names every cluster's DNS-based endpoint, whether or not it takes external traffic.
        endpoints = outputs.get("controlPlaneEndpointsConfig")
        endpoints = dict(endpoints) if isinstance(endpoints, dict) else {}
        dns = endpoints.get("dnsEndpointConfig")
        endpoints["dnsEndpointConfig"] = {
            **(dns if isinstance(dns, dict) else {}),
            "endpoint": self.dns_endpoint or FAKE_DNS_ENDPOINT.format(region=location),
        }
        outputs["controlPlaneEndpointsConfig"] = endpoints
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

    def _project_iam_member(self, name: str, outputs: Outputs) -> str:  # noqa: ARG002 - id rule
        outputs["etag"] = "BwYFAKEFAKE="
        return f"{outputs.get('project')}/{outputs.get('role')}/{outputs.get('member')}"

    def _bucket_iam_member(self, name: str, outputs: Outputs) -> str:  # noqa: ARG002 - id rule
        outputs["etag"] = "CAE="
        return f"b/{outputs.get('bucket')}/{outputs.get('role')}/{outputs.get('member')}"

    def _kubernetes(self, name: str, outputs: Outputs) -> str:
        metadata = outputs.get("metadata")
        if isinstance(metadata, dict):
            namespace = metadata.get("namespace")
            obj_name = metadata.get("name") or name
            return f"{namespace}/{obj_name}" if namespace else str(obj_name)
        return name

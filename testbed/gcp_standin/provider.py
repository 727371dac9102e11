"""The test bed's stand-in for the `gcp` resource provider (pulumi-gcp 10.2.0).

The real provider is bridged from a patched Terraform provider and cannot be built from the
Go module proxy here, so the engine test bed installs this one under the same name and
version. It speaks the real provider protocol (the Python SDK's provider server), and:

- `Check` refuses inputs the real SDK's types refuse: unknown property names, wrong value
  kinds, missing required inputs (`types_model`), like a provider's own `Check`, and adds the
  schema defaults the real provider's `Check` adds (listed in `__defaults`), so policies see
  inputs as they do with the real provider;
- `Diff` plans as the bridge does, from the shared reference table of what the real provider
  replaces on (`replace_facts`, read at start from the shared test data): `replaces` with
  top-level names, `detailedDiff` with `*_REPLACE` kinds, delete-before-replace by the bridge's
  rule, an unknown value where a change could force a replacement planning one;
- `Create` returns the inputs plus what a real create computes (ids, self links, emails, a
  cluster endpoint and CA, a Lustre mount point, from the same table preflight's mocks use);
  during a preview every output the real provider always fills (its schema's required and
  computed outputs, read from the SDK's output types) and the program did not set is unknown;
- the invokes the program makes (`getProject`, `getClientConfig`, and the reads of the GPU
  reservation and the cluster, from a description: `invokes`) are answered with every field of
  the SDK's result type.

It cannot prove that Google's APIs accept a request, that values are valid beyond their type
(a malformed CIDR passes), or that a resource reads back as it was written: `Read` returns the
state it was given (only a cluster's endpoint and CA follow the environment), so a refresh
shows no drift that GCP would. Every call is written to stderr and to the log file named by
NEMO_RL_GKE_STANDIN_LOG, each line starting "gcp stand-in".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from pulumi.provider.experimental import provider as p
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.provider.experimental.server import ProviderServicer
from pulumi.runtime import proto
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import provider_pb2_grpc

from planning.resource_types import (
    CLUSTER,
    GET_CLIENT_CONFIG,
    GET_PROJECT,
    LUSTRE,
    PSA_CONNECTION,
)
from pulumi_offline import bridge_diff
from pulumi_offline import gcp_types as types_model
from pulumi_offline.cloud_outputs import plan_known
from pulumi_offline.fake_cloud import FAKE_CA, FAKE_ENDPOINT, FakeCloud
from pulumi_offline.fake_reservations import NotFoundError
from testbed.gcp_standin import invokes, producers, replace_facts

VERSION = "10.2.0"
"""The pulumi-gcp release this stands in for (the SDK's pulumi-plugin.json)."""


def log(message: str) -> None:
    """One line to stderr and to the stand-in's log file."""
    line = f"gcp stand-in: {message}"
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get("NEMO_RL_GKE_STANDIN_LOG")
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""How an unknown value looks in plain form (the engine's own sentinel string)."""


def plain(value: PropertyValue) -> Any:
    """A PropertyValue as plain Python (secrets unwrapped, unknowns as UNKNOWN)."""
    inner = value.value
    if isinstance(inner, Computed):
        return UNKNOWN
    if isinstance(inner, tuple | list):
        return [plain(v) for v in inner]
    if isinstance(inner, Mapping):
        return {k: plain(v) for k, v in inner.items()}
    return inner


def wrap(value: Any, secret: bool = False) -> PropertyValue:
    """Plain Python back into a PropertyValue."""
    if isinstance(value, PropertyValue):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, str | Computed):
        return PropertyValue(value, is_secret=secret)
    if isinstance(value, int | float):
        return PropertyValue(float(value), is_secret=secret)
    if isinstance(value, list | tuple):
        return PropertyValue([wrap(v) for v in value], is_secret=secret)
    if isinstance(value, Mapping):
        return PropertyValue({str(k): wrap(v) for k, v in value.items()}, is_secret=secret)
    raise TypeError(f"cannot wrap {type(value).__name__}")


def marshalable(value: PropertyValue) -> PropertyValue:
    """Unknowns as the wire sentinel: the SDK's PropertyValue.marshal cannot send Computed."""
    inner = value.value
    if isinstance(inner, Computed):
        return PropertyValue(UNKNOWN, is_secret=value.is_secret)
    if isinstance(inner, tuple | list):
        return PropertyValue([marshalable(v) for v in inner], is_secret=value.is_secret)
    if isinstance(inner, Mapping):
        return PropertyValue(
            {k: marshalable(v) for k, v in inner.items()}, is_secret=value.is_secret
        )
    return value


def dns_endpoint(ip_endpoint: str | None) -> str | None:
    """The cluster's DNS name in the test bed: NEMO_RL_GKE_STANDIN_DNS_ENDPOINT, else the local
    API server by name (`localhost:PORT`, a name its certificate holds), else preflight's fake.

    GKE serves the DNS endpoint with a publicly trusted certificate, so the kubeconfig names no
    CA; the test bed makes the local CA trusted instead (SSL_CERT_FILE, testbed.local_cluster).
    """
    configured = os.environ.get("NEMO_RL_GKE_STANDIN_DNS_ENDPOINT")
    if configured:
        return configured
    if ip_endpoint and ip_endpoint.startswith("127.0.0.1:"):
        return "localhost:" + ip_endpoint.split(":", 1)[1]
    return None


def token_of(urn: str) -> str:
    """The resource type of a URN (`...::parent$child::name` -> the child's type)."""
    return urn.split("::")[2].rsplit("$", 1)[-1]


def name_of(urn: str) -> str:
    """The logical name of a URN."""
    return urn.split("::", 3)[3]


def _failures(found: list[types_model.Failure]) -> list[p.CheckFailure]:
    return [p.CheckFailure(f.property, f.reason) for f in found]


def _computed_inside(given: Any, computed: Any, prior: Any) -> Any:
    """An input value with the fields the cloud adds inside it: the prior state's value where
    there is one (an update), else unknown (a create); what the program set stays as set, as
    Terraform plans an attribute that is Computed only."""
    if isinstance(given, dict) and isinstance(computed, dict):
        before = prior if isinstance(prior, dict) else {}
        merged = dict(given)
        for key, value in computed.items():
            if key in given:
                merged[key] = _computed_inside(given[key], value, before.get(key))
            else:
                merged[key] = before.get(key, UNKNOWN)
        return merged
    return given


class GcpStandIn(p.Provider):
    """Checks inputs against pulumi-gcp's types and plays the cloud's side of a create."""

    def __init__(self) -> None:
        self.project = ""
        self.region = ""
        self.zone = ""

    def _cloud(self) -> FakeCloud:
        ca_file = os.environ.get("NEMO_RL_GKE_STANDIN_CA_FILE")
        ca = FAKE_CA
        if ca_file:
            import base64

            ca = base64.b64encode(Path(ca_file).read_bytes()).decode()
        endpoint = os.environ.get("NEMO_RL_GKE_STANDIN_ENDPOINT")
        return FakeCloud(
            self.project,
            self.region,
            self.zone,
            endpoint=endpoint or FAKE_ENDPOINT,
            ca=ca,
            dns_endpoint=dns_endpoint(endpoint),
        )

    async def check_config(self, request: p.CheckRequest) -> p.CheckResponse:
        """Provider configuration against ProviderArgs."""
        failures = types_model.check_provider_config(request.new_inputs)
        log(f"CheckConfig {request.urn}: {len(failures)} failure(s)")
        return p.CheckResponse(inputs=request.new_inputs, failures=_failures(failures))

    async def diff_config(self, request: p.DiffRequest) -> p.DiffResponse:  # noqa: ARG002
        """The default provider never needs replacing."""
        return p.DiffResponse(changes=False)

    async def configure(self, request: p.ConfigureRequest) -> p.ConfigureResponse:
        """Remember the project, region and zone the stack configures."""
        variables = request.variables
        self.project = variables.get("gcp:config:project", "")
        self.region = variables.get("gcp:config:region", "")
        self.zone = variables.get("gcp:config:zone", "")
        log(
            "stand-in for pulumi-gcp 10.2.0 (not the real provider: no Google API is called)"
            f" configured for project {self.project!r}, region {self.region!r}"
        )
        return p.ConfigureResponse(
            accept_secrets=True, supports_preview=True, accept_resources=True, accept_outputs=False
        )

    async def check(self, request: p.CheckRequest) -> p.CheckResponse:
        """Refuse what the SDK's types refuse; add the real provider's Check defaults."""
        token = token_of(request.urn)
        failures = types_model.check_resource(token, request.new_inputs)
        log(f"Check {token} {name_of(request.urn)!r}: {len(failures)} failure(s)")
        for failure in failures:
            log(f"  {failure.property}: {failure.reason}")
        if failures:
            return p.CheckResponse(inputs=request.new_inputs, failures=_failures(failures))
        inputs, filled = with_check_defaults(replace_facts.load()[token], request.new_inputs)
        if filled:
            log(f"  Check defaults: {', '.join(filled)}")
        return p.CheckResponse(inputs=inputs, failures=[])

    def _computed(
        self, token: str, name: str, inputs: Mapping[str, PropertyValue]
    ) -> tuple[str, dict[str, PropertyValue]]:
        """Inputs echoed (secrets kept), plus every output a create computes."""
        echoed = {k: plain(v) for k, v in inputs.items()}
        computed = dict(echoed)
        resource_id = self._cloud().compute_outputs(token, name, computed)
        outputs = {k: marshalable(v) for k, v in inputs.items()}
        for key, value in computed.items():
            if key in inputs and echoed.get(key) == value:
                continue
            if key not in types_model.output_names(token):
                raise RuntimeError(f"stand-in bug: {token} has no output {key!r}")
            outputs[key] = wrap(value)
        for key, value in self._planned(token, inputs).items():
            outputs.setdefault(key, value)
        for key in types_model.always_set_outputs(token) - set(outputs):
            outputs[key] = wrap(types_model.placeholder(token, key))
        return resource_id, outputs

    def _planned(self, token: str, inputs: Mapping[str, PropertyValue]) -> dict[str, PropertyValue]:
        """Outputs Terraform's plan already knows (CustomizeDiff sets them): the provider's
        project where the program leaves it out, `deletionPolicy` DELETE, the labels; which
        of them a type has is read from the SDK's output types, not preflight's table."""
        names = types_model.output_names(token)
        known = plan_known(token, inputs, self.project, outputs=names)
        return {key: wrap(value) for key, value in known.items()}

    def _preview(
        self,
        token: str,
        name: str,
        inputs: Mapping[str, PropertyValue],
        prior: Mapping[str, PropertyValue] | None = None,
    ) -> dict[str, PropertyValue]:
        """A create's or update's outputs during a preview: inputs, what the plan knows, and
        what the cloud computes inside an input block (a cluster's DNS endpoint name) as the
        prior state has it on an update, unknown on a create, as Terraform plans a computed
        attribute of a nested block."""
        outputs = {k: marshalable(v) for k, v in inputs.items()}
        echoed = {k: plain(v) for k, v in inputs.items()}
        computed = dict(echoed)
        self._cloud().compute_outputs(token, name, computed)
        before = {k: plain(v) for k, v in (prior or {}).items()}
        for key, given in echoed.items():
            if key in computed and computed[key] != given:
                merged = _computed_inside(given, computed[key], before.get(key))
                outputs[key] = wrap(merged, secret=inputs[key].is_secret)
        for key, value in self._planned(token, inputs).items():
            outputs.setdefault(key, value)
        for key in types_model.always_set_outputs(token) - set(outputs):
            outputs[key] = wrap(UNKNOWN)
        return outputs

    async def create(self, request: p.CreateRequest) -> p.CreateResponse:
        """Echo inputs and add computed outputs (unknown during a preview)."""
        token, name = token_of(request.urn), name_of(request.urn)
        if request.preview:
            log(f"Preview of create {token} {name!r}")
            return p.CreateResponse(
                resource_id=None, properties=self._preview(token, name, request.properties)
            )
        resource_id, outputs = self._computed(token, name, request.properties)
        log(f"Create {token} {name!r} -> {resource_id}")
        if token == LUSTRE:
            producers.created(
                resource_id, str(plain(request.properties.get("network", PropertyValue(""))))
            )
        return p.CreateResponse(resource_id=resource_id, properties=outputs)

    async def update(self, request: p.UpdateRequest) -> p.UpdateResponse:
        """New inputs; computed outputs as they were (a preview) or as the cloud has them."""
        token, name = token_of(request.urn), name_of(request.urn)
        if request.preview:
            log(f"Preview of update {token} {name!r}")
            outputs = self._preview(token, name, request.news, request.olds)
            for key, value in request.olds.items():
                if key not in request.news and not key.startswith("__"):
                    outputs[key] = marshalable(value)
            return p.UpdateResponse(properties=outputs)
        _, outputs = self._computed(token, name, request.news)
        log(f"Update {token} {name!r}")
        return p.UpdateResponse(properties=outputs)

    async def delete(self, request: p.DeleteRequest) -> None:
        """Nothing to delete: nothing was created. A private services connection that a Lustre
        instance still uses is refused, as Google refuses it (`producers`)."""
        token = token_of(request.urn)
        log(f"Delete {token} {name_of(request.urn)!r} ({request.resource_id})")
        if token == LUSTRE:
            producers.deleted(request.resource_id)
        if token == PSA_CONNECTION:
            network = str(plain(request.properties.get("network", PropertyValue(""))))
            still = producers.users(network)
            if still:
                log(f"  refused: Lustre {', '.join(still)} still uses {network}")
                raise RuntimeError(
                    f"Error waiting for Delete Service Networking Connection: {producers.REFUSAL}"
                )

    async def read(self, request: p.ReadRequest) -> p.ReadResponse:
        """The state it is given, unchanged (no GCP to ask), except a cluster's endpoint and CA,
        which are what the environment says now (NEMO_RL_GKE_STANDIN_ENDPOINT / _CA_FILE), as
        after a rotation. A refresh against the stand-in can therefore show no drift that GCP
        would report (a field the API fills differently, a node count the autoscaler moved)."""
        token = token_of(request.urn)
        log(f"Read {token} {name_of(request.urn)!r} (state returned as given)")
        properties = dict(request.properties)
        if token == CLUSTER and "endpoint" in properties:
            current = self._cloud()
            master_auth = plain(properties.get("masterAuth", PropertyValue({})))
            master_auth = master_auth if isinstance(master_auth, dict) else {}
            properties["endpoint"] = wrap(current.endpoint)
            properties["masterAuth"] = wrap({**master_auth, "clusterCaCertificate": current.ca})
            if current.dns_endpoint and "controlPlaneEndpointsConfig" in properties:
                endpoints = plain(properties["controlPlaneEndpointsConfig"])
                endpoints = endpoints if isinstance(endpoints, dict) else {}
                dns = endpoints.get("dnsEndpointConfig") or {}
                endpoints["dnsEndpointConfig"] = {**dns, "endpoint": current.dns_endpoint}
                properties["controlPlaneEndpointsConfig"] = wrap(endpoints)
        return p.ReadResponse(
            resource_id=request.resource_id, properties=properties, inputs=request.inputs
        )

    async def invoke(self, request: p.InvokeRequest) -> p.InvokeResponse:
        """Answer getProject / getClientConfig and the reservation and cluster reads
        (`invokes`) with every field of the SDK's result type; a read of what is not there
        fails."""
        failures = types_model.check_invoke(request.tok, request.args)
        log(f"Invoke {request.tok}: {len(failures)} failure(s)")
        if failures:
            return p.InvokeResponse(failures=_failures(failures))
        args = {k: plain(v) for k, v in request.args.items()}
        if request.tok in invokes.TOKENS:
            try:
                result = invokes.answer_read(request.tok, args, self.project)
            except NotFoundError as error:
                log(f"  {error}")
                return p.InvokeResponse(failures=[p.CheckFailure("name", str(error))])
        else:
            result = self._answer(request.tok, args)
        expected = types_model.result_names(types_model.function_signature(request.tok).result)
        missing = expected - set(result)
        extra = set(result) - expected
        if missing or extra:
            raise RuntimeError(f"stand-in bug: {request.tok} result differs: {missing=} {extra=}")
        return p.InvokeResponse(return_value={k: wrap(v) for k, v in result.items()})

    def _answer(self, token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        cloud = self._cloud()
        if token == GET_PROJECT:
            project = args.get("projectId") or self.project
            mocked = cloud.call_result(token, {"projectId": project})
            return {
                "autoCreateNetwork": True,
                "billingAccount": "000000-000000-000000",
                "deletionPolicy": "PREVENT",
                "effectiveLabels": {},
                "folderId": "",
                "id": f"projects/{project}",
                "labels": {},
                "name": mocked["name"],
                "number": mocked["number"],
                "orgId": "000000000000",
                "projectId": project,
                "pulumiLabels": {},
                "tags": {},
            }
        if token == GET_CLIENT_CONFIG:
            mocked = cloud.call_result(token, {})
            return {k: mocked[k] for k in ("accessToken", "id", "project", "region", "zone")}
        raise RuntimeError(f"the stand-in does not answer {token}")


def with_check_defaults(
    facts: bridge_diff.TypeFacts, inputs: Mapping[str, PropertyValue]
) -> tuple[dict[str, PropertyValue], list[str]]:
    """The inputs with the Check defaults of `facts` (secrets and unknowns kept as they are)."""
    result = dict(inputs)
    filled: list[str] = []
    for path, default in sorted(facts.defaults.items()):
        if default is False or default == 0 or default == "":
            continue  # the bridge no longer synthesizes falsy defaults (#3398)
        if _fill(result, path.split("."), default):
            filled.append(path)
    top = [f for f in filled if "." not in f and "[" not in f]
    if top:
        given = plain(result.get(bridge_diff.DEFAULTS_KEY, PropertyValue([])))
        listed = sorted({*(given if isinstance(given, list) else []), *top})
        result[bridge_diff.DEFAULTS_KEY] = wrap(listed)
    return result, filled


def _fill(target: dict[str, PropertyValue], parts: list[str], default: Any) -> bool:
    """Set `default` at `parts` under every parent present (`a[]` visits each element)."""
    head, rest = parts[0], parts[1:]
    key = head.removesuffix("[]")
    if not rest:
        present = target.get(key)
        if present is not None and present.value is not None:
            return False
        target[key] = wrap(default)
        return True
    child = target.get(key)
    if child is None or not isinstance(child.value, Mapping | tuple):
        return False  # no parent object (or an unknown one): the bridge adds nothing there
    if head.endswith("[]"):
        if not isinstance(child.value, tuple):
            return False
        elements, filled = [], False
        for element in child.value:
            if isinstance(element.value, Mapping):
                inner = dict(element.value)
                filled = _fill(inner, rest, default) or filled
                element = PropertyValue(inner, is_secret=element.is_secret)
            elements.append(element)
        target[key] = PropertyValue(elements, is_secret=child.is_secret)
        return filled
    if not isinstance(child.value, Mapping):
        return False
    inner = dict(child.value)
    filled = _fill(inner, rest, default)
    target[key] = PropertyValue(inner, is_secret=child.is_secret)
    return filled


_KINDS = {kind: getattr(proto.PropertyDiff, kind.value) for kind in bridge_diff.Kind}


class _Servicer(ProviderServicer):
    """The SDK's provider servicer, with a Diff that compares old inputs to new inputs (the
    SDK's own passes old outputs) the way the bridge does."""

    async def Diff(self, request: Any, context: Any) -> Any:  # noqa: N802, ARG002 - gRPC method
        token = token_of(request.urn)
        olds = {k: plain(v) for k, v in PropertyValue.unmarshal_map(request.old_inputs).items()}
        news = {k: plain(v) for k, v in PropertyValue.unmarshal_map(request.news).items()}
        facts = replace_facts.load().get(token)
        if facts is None:
            raise RuntimeError(f"the replacement facts table has no entry for {token}")
        result = bridge_diff.diff_inputs(facts, olds, news, list(request.ignoreChanges))
        summary = (
            ", ".join(f"{path} {kind.value}" for path, kind in sorted(result.detailed.items()))
            or "no changes"
        )
        dbr = " (delete before replace)" if result.delete_before_replace else ""
        log(f"Diff {token} {name_of(request.urn)!r}: {summary}; replaces {result.replaces}{dbr}")
        return proto.DiffResponse(
            changes=(
                proto.DiffResponse.DIFF_SOME if result.changed else proto.DiffResponse.DIFF_NONE
            ),
            replaces=result.replaces,
            deleteBeforeReplace=result.delete_before_replace,
            diffs=result.diffs,
            detailedDiff={
                path: proto.PropertyDiff(kind=_KINDS[kind], inputDiff=True)
                for path, kind in result.detailed.items()
            },
            hasDetailedDiff=True,
        )


def serve(engine_address: str) -> None:
    """Serve the stand-in on a loopback port and print the port, as plugins do."""

    async def run() -> None:
        server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
        servicer = _Servicer([engine_address], VERSION, GcpStandIn(), engine_address)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        log(f"serving on 127.0.0.1:{port}")
        sys.stdout.write(f"{port}\n")  # the engine reads the port from the first line
        sys.stdout.flush()
        try:
            await server.wait_for_termination()
        finally:
            # The engine ends a plugin with SIGINT: stop the server inside the loop, or its
            # finalizer runs after the loop has closed and prints a traceback into the
            # engine's output ("Event loop is closed").
            await server.stop(None)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())

"""Render a preflight run: a preview-like tree, a summary, violations, and JSON."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planning import resource_types as rt
from planning.storage import aggregate_throughput_mbps
from preflight.mock_run import ProgramRun
from preflight.policy_runner import PolicyInfo, Violation
from preflight.recorder import Record

# Properties worth a glance in the tree, per type (wire names).
KEY_PROPERTIES: dict[str, tuple[str, ...]] = {
    rt.NETWORK: ("name", "mtu", "networkProfile"),
    rt.SUBNETWORK: ("name", "ipCidrRange", "region"),
    rt.FIREWALL: ("name", "sourceRanges"),
    rt.ROUTER: ("name", "region"),
    rt.ROUTER_NAT: ("name",),
    rt.GLOBAL_ADDRESS: ("name", "prefixLength", "purpose"),
    rt.CLUSTER: ("name", "location", "minMasterVersion"),
    rt.NODE_POOL: ("name", "nodeLocations"),
    rt.LUSTRE: ("instanceId", "capacityGib", "perUnitStorageThroughput"),
    rt.BUCKET: ("name", "location"),
    rt.SERVICE_ACCOUNT: ("accountId",),
    rt.HELM_RELEASE: ("chart", "version", "namespace"),
}


def display_type(type_: str) -> str:
    """`gcp:compute/network:Network` -> `gcp:compute:Network`, as `pulumi preview` prints it.

    The file segment is dropped only when it is the type's own name (`kubernetes:core/v1:Secret`
    keeps its `/v1`).
    """
    parts = type_.split(":")
    if len(parts) == 3 and "/" in parts[1]:
        module, _, last = parts[1].rpartition("/")
        if last == parts[2][:1].lower() + parts[2][1:]:
            return f"{parts[0]}:{module}:{parts[2]}"
    return type_


def _num(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _short(value: Any) -> str:
    value = _num(value)
    if isinstance(value, list):
        return "[" + ",".join(_short(v) for v in value) + "]"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def key_properties(record: Record) -> str:
    """`name=... mtu=...` for the tree."""
    inputs = record.inputs
    pieces = []
    if record.type.startswith("kubernetes:") and "metadata" in inputs:
        meta = inputs["metadata"]
        if isinstance(meta, Mapping):
            ns = meta.get("namespace")
            pieces.append(f"name={(ns + '/') if ns else ''}{meta.get('name')}")
    for prop in KEY_PROPERTIES.get(record.type, ()):
        if prop in inputs:
            pieces.append(f"{prop}={_short(inputs[prop])}")
    if record.protect:
        pieces.append("[protected]")
    return " ".join(pieces)


def render_tree(run: ProgramRun) -> str:
    """The component tree, children sorted by type then name."""
    children: dict[str | None, list[Record]] = defaultdict(list)
    urns = {r.urn for r in run.records}
    for record in run.records:
        parent = record.parent if record.parent in urns else None
        children[parent].append(record)
    for kids in children.values():
        kids.sort(key=lambda r: (display_type(r.type), r.name))

    type_width = max((len(display_type(r.type)) for r in run.records), default=20) + 8
    lines = [f"{'pulumi:pulumi:Stack':<{type_width}} {run.project}-{run.stack}"]

    def walk(parent: str | None, prefix: str) -> None:
        kids = children.get(parent, [])
        for i, record in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└─ " if last else "├─ "
            label = f"{prefix}{branch}{display_type(record.type)}"
            lines.append(
                f"{label:<{type_width}} {record.name:<24} {key_properties(record)}".rstrip()
            )
            walk(record.urn, prefix + ("   " if last else "│  "))

    walk(None, "")
    return "\n".join(lines)


@dataclass
class Summary:
    """Headline numbers of a run."""

    resources: int
    resources_by_type: dict[str, int]
    total_gpus: int
    gpu_pools: list[dict[str, Any]] = field(default_factory=list)
    rdma_nics_per_gpu_node: int = 0
    lustre: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    """GRPO runs the stack starts (RayJobs), with their identity, directories and workers."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "resources": self.resources,
            "resourcesByType": self.resources_by_type,
            "totalGpus": self.total_gpus,
            "gpuPools": self.gpu_pools,
            "rdmaNicsPerGpuNode": self.rdma_nics_per_gpu_node,
            "lustre": self.lustre,
            "runs": self.runs,
        }


def summarize(run: ProgramRun) -> Summary:
    """Count resources and derive GPU, RDMA and Lustre figures from what was registered."""
    from policies.quota import max_nodes  # the quota policy's own counting rule

    by_type = Counter(r.type for r in run.records)
    roce_networks = {
        r.inputs.get("name")
        for r in run.by_type(rt.NETWORK)
        if str(r.inputs.get("networkProfile", "")).endswith("-vpc-roce")
    }
    pools: list[dict[str, Any]] = []
    total = 0
    rdma_nics = 0
    for pool in run.by_type(rt.NODE_POOL):
        inputs = pool.inputs
        node_config = inputs.get("nodeConfig") or {}
        accels = node_config.get("guestAccelerators") or []
        per_node = sum(int(a.get("count", 0)) for a in accels if isinstance(a, Mapping))
        if not per_node:
            continue
        nodes = max_nodes(inputs)
        extra = (inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
        nics = sum(1 for n in extra if isinstance(n, Mapping) and n.get("network") in roce_networks)
        rdma_nics = max(rdma_nics, nics)
        total += nodes * per_node
        pools.append(
            {
                "name": pool.name,
                "machineType": node_config.get("machineType"),
                "accelerator": accels[0].get("type") if accels else None,
                "maxNodes": nodes,
                "gpusPerNode": per_node,
                "rdmaNics": nics,
            }
        )
    lustre = []
    for inst in run.by_type(rt.LUSTRE):
        capacity = int(inst.inputs.get("capacityGib", 0))
        tier = int(inst.inputs.get("perUnitStorageThroughput", 0))
        lustre.append(
            {
                "name": inst.inputs.get("instanceId", inst.name),
                "capacityGib": capacity,
                "throughputPerTib": tier,
                "aggregateMBps": round(aggregate_throughput_mbps(tier, capacity)),
            }
        )
    runs = [_run_summary(job, run) for job in run.by_type(rt.RAY_JOB)]
    return Summary(
        runs=runs,
        resources=len(run.records),
        resources_by_type=dict(sorted(by_type.items())),
        total_gpus=total,
        gpu_pools=pools,
        rdma_nics_per_gpu_node=rdma_nics,
        lustre=lustre,
    )


def _run_summary(job: Record, run: ProgramRun) -> dict[str, Any]:
    """A RayJob as the run it starts: name, id, directories, and the workers it gets."""
    meta = job.inputs.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = job.inputs.get("spec") or {}
    own = "rayClusterSpec" in spec
    workers = 0
    if own:
        groups = spec["rayClusterSpec"].get("workerGroupSpecs") or []
        workers = sum(int(_num(g.get("replicas", 0))) for g in groups)
    else:
        for cluster in run.by_type(rt.RAY_CLUSTER):
            groups = (cluster.inputs.get("spec") or {}).get("workerGroupSpecs") or []
            workers = sum(int(_num(g.get("replicas", 0))) for g in groups)
    return {
        "rayJob": meta.get("name"),
        "run": annotations.get("nemo-rl-gke/run"),
        "runId": annotations.get("nemo-rl-gke/run-id"),
        "attempt": annotations.get("nemo-rl-gke/attempt"),
        "checkpointDir": annotations.get("nemo-rl-gke/checkpoint-dir"),
        "logDir": annotations.get("nemo-rl-gke/log-dir"),
        "gpus": annotations.get("nemo-rl-gke/gpus"),
        "workers": workers,
        "cluster": "its own (deleted when the run ends)" if own else "the stack's RayCluster",
    }


def render_summary(summary: Summary) -> str:
    """Human-readable summary block."""
    lines = [f"Resources: {summary.resources}"]
    for type_, count in summary.resources_by_type.items():
        lines.append(f"  {count:>3} {display_type(type_)}")
    lines.append(f"GPUs (at max scale): {summary.total_gpus}")
    for pool in summary.gpu_pools:
        lines.append(
            f"  pool {pool['name']}: {pool['maxNodes']} x {pool['machineType']}"
            f" ({pool['gpusPerNode']} x {pool['accelerator']}), {pool['rdmaNics']} RDMA NICs/node"
        )
    lines.append(f"RDMA NICs per GPU node: {summary.rdma_nics_per_gpu_node}")
    if summary.lustre:
        for fs in summary.lustre:
            lines.append(
                f"Lustre {fs['name']}: {fs['capacityGib']} GiB x {fs['throughputPerTib']} MB/s/TiB"
                f" = {fs['aggregateMBps']} MB/s aggregate"
            )
    else:
        lines.append("Lustre: none")
    for job in summary.runs:
        lines.append(
            f"GRPO run {job['run']} (run id {job['runId']}, attempt {job['attempt']}): RayJob"
            f" {job['rayJob']} on {job['cluster']}, {job['workers']} GPU workers for"
            f" {job['gpus']} GPUs"
        )
        lines.append(f"  checkpoints {job['checkpointDir']}")
        lines.append(f"  logs        {job['logDir']}")
    if not summary.runs:
        lines.append("GRPO run: none (ray.job.enabled is false)")
    return "\n".join(lines)


def render_violations(policies: list[PolicyInfo], violations: list[Violation]) -> str:
    """Policy results like the CLI's 'Policies:' block."""
    lines = [f"Policies evaluated: {len(policies)} ({', '.join(p.name for p in policies)})"]
    if not violations:
        lines.append("Policy violations: none")
        return "\n".join(lines)
    lines.append(f"Policy violations: {len(violations)}")
    for v in violations:
        where = f" [{v.urn.rsplit('::', 1)[-1]}]" if v.urn else ""
        lines.append(f"  [{v.enforcement_level}] {v.policy}{where}: {v.message}")
    return "\n".join(lines)


def to_json(
    run: ProgramRun,
    policies: list[PolicyInfo],
    violations: list[Violation],
    summary: Summary,
    mode: str = "preview",
) -> dict[str, Any]:
    """The `--json` document; secrets appear only as `[secret]`. It records what a later
    `python -m preflight --previous FILE` compares with (inputs, what they depend on)."""
    return {
        "stack": run.stack,
        "project": run.project,
        "mode": mode,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "custom": r.custom,
                "parent": r.parent,
                "dependencies": r.dependencies,
                "propertyDependencies": r.property_dependencies,
                "protect": r.protect,
                "deleteBeforeReplace": r.delete_before_replace,
                "ignoreChanges": r.ignore_changes,
                "provider": r.provider,
                "inputs": r.inputs,
            }
            for r in run.records
        ],
        "outputs": {key: export.shown for key, export in sorted(run.exports.items())},
        "policies": [{"name": p.name, "enforcementLevel": p.enforcement_level} for p in policies],
        "violations": [
            {
                "policy": v.policy,
                "enforcementLevel": v.enforcement_level,
                "urn": v.urn,
                "message": v.message,
            }
            for v in violations
        ],
        "summary": summary.as_dict(),
    }

"""Every configuration the models accept plans; every other one is refused naming its key.

Hypothesis draws stack configs across the whole contract - pool sizes from 0 to GKE's 1000,
every capacity, gates on and off, thresholds, the job and the smoke, Lustre tiers - including
the corners the committed stacks never touch (a fixed pool of 0 nodes with the gates on, a job
on a parked pool). A draw either fails to load with one InvalidStackConfig naming a key of the
stack, or the planning the program does from it (gates, smoke, the GRPO run and its commands,
the address plan, names) succeeds. A few draws go through the whole program under preflight.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planning.ray import grpo_entrypoint, submit_command, worker_size
from planning.verify import plan_gates, plan_smoke
from program.verify import verify_inputs
from stack_config import InvalidStackConfig, StackConfig, load_stack_config
from tests.harness import run_stack
from tests.stack_config.test_stack import values

NODES = st.one_of(st.sampled_from([0, 0, 0, 1, 2, 1000]), st.integers(0, 1000))


@st.composite
def gpu_configs(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["b200", "h200", "l4"]))
    sold = ["reservation", "spot", "flex-start"] + (["on-demand"] if kind == "l4" else [])
    # Mostly what the machine is sold as (so most draws plan), sometimes anything.
    anything = not draw(st.integers(0, 5))
    capacity = draw(st.sampled_from([*sold, "on-demand"] if anything else sold))
    gpu: dict[str, Any] = {"type": kind, "capacity": capacity}
    if capacity == "flex-start" and draw(st.integers(0, 3)):
        gpu["autoscaling"] = {"min": 0, "max": draw(st.integers(1, 1000))}
    elif draw(st.booleans()):
        gpu["nodes"] = draw(NODES)
    else:
        low = draw(NODES)
        gpu["autoscaling"] = {"min": low, "max": draw(st.integers(max(1, low), 1000))}
    if gpu["capacity"] == "reservation":
        gpu["reservation"] = draw(
            st.sampled_from(
                ["r1", "r1/reservationBlocks/b1", "r/reservationBlocks/b/reservationSubBlocks/s"]
            )
        )
    if not draw(st.integers(0, 3)):
        gpu["placement"] = draw(st.sampled_from(["compact", "none"]))
    return gpu


@st.composite
def stack_configs(draw: st.DrawFn) -> dict[str, Any]:
    lustre = draw(st.booleans())
    config: dict[str, Any] = {
        "gpu": draw(gpu_configs()),
        "lustre": draw(
            st.sampled_from(
                # Each tier's smallest size (managed-lustre create-instance), and one misfit.
                [(500, 18000), (125, 72000), (250, 36000), (1000, 9000)] * 2 + [(500, 9000)]
            ).map(lambda t: {"enabled": lustre, "throughput": t[0], "capacityGib": t[1]})
        ),
        "bucket": {"enabled": not lustre or draw(st.booleans())},
        "protect": draw(st.booleans()),
    }
    verify: dict[str, Any] = {
        "enabled": draw(st.sampled_from([None, True, False])),
        "grpoSmoke": {"enabled": not draw(st.integers(0, 3)), "steps": draw(st.integers(1, 100))},
        "nccl": {"collectives": draw(st.sampled_from([["all_gather", "all_reduce"]] * 4
                                                      + [["all_gather"], ["all_reduce"]]))},
        "storage": {"timeoutMinutes": draw(st.integers(1, 600))},
    }  # fmt: skip
    if not draw(st.integers(0, 3)):
        verify["nccl"]["minBusBandwidthGBPerSecond"] = draw(st.floats(0.1, 400))
    if not draw(st.integers(0, 3)):
        verify["nccl"]["minAllReduceBusBandwidthGBPerSecond"] = draw(st.floats(0.1, 2000))
    config["verify"] = {k: v for k, v in verify.items() if v is not None}
    job: dict[str, Any] = {
        "enabled": not draw(st.integers(0, 3)),
        "steps": draw(st.integers(1, 10**6)),
    }
    if not draw(st.integers(0, 3)):
        job["nodes"] = draw(st.integers(1, max(1, config["gpu"].get("nodes") or 1)))
    if draw(st.booleans()):
        job["gpusPerNode"] = draw(st.sampled_from([1, 8]))
    if draw(st.booleans()):
        job["attempt"] = draw(st.integers(1, 99))
    config["ray"] = {"job": job, "operator": draw(st.sampled_from(["helm", "gke-addon"]))}
    return config


def load(config: dict[str, Any]) -> StackConfig | None:
    """The config, or None when it is refused with one line naming a key of the stack."""
    vals = values(**config)
    tokens = {"nemo-rl-gke:hfToken", "nemo-rl-gke:wandbApiKey"}
    vals.update(dict.fromkeys(tokens, "a-secret"))
    try:
        return load_stack_config(vals, "b200", tokens)
    except InvalidStackConfig as err:
        message, key = str(err), err.key
    assert "\n" not in message
    assert key.startswith(("nemo-rl-gke:", "gcp:")), message
    assert "Fix:" in message
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stack_configs())
def test_every_accepted_config_plans(config: dict[str, Any]) -> None:
    cfg = load(config)
    if cfg is None:
        return
    inputs = verify_inputs(cfg)
    settings_ = cfg.gate_settings
    gates = plan_gates(inputs, settings_)
    for gate in gates:
        assert gate.nodes >= 1, gate
    run = cfg.grpo_run
    assert run.nodes >= 1
    grpo_entrypoint(run)
    submit_command(run, "true")
    worker_size(cfg.gpu.profile)
    if settings_.grpo_smoke:
        plan_smoke(run, inputs, steps=settings_.smoke_steps, image="img:v1")
    assert len(cfg.rdma_cidrs) == cfg.gpu.profile.rdma_nics
    cfg.required_gke_minimums()
    assert cfg.bucket_name


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(config=stack_configs().filter(lambda c: load(c) is not None))
def test_accepted_configs_run_the_whole_program(
    config: dict[str, Any], tmp_path_factory: Any
) -> None:
    stack = {f"nemo-rl-gke:{k}": v for k, v in config.items()}
    base = {
        "gcp:project": "my-project-123",
        "gcp:region": "us-central1",
        "nemo-rl-gke:zone": "us-central1-b",
        "pulumi:disable-default-providers": ["kubernetes"],
        "nemo-rl-gke:hfToken": {"secure": "v1:fake"},
        "nemo-rl-gke:wandbApiKey": {"secure": "v1:fake"},
    }
    result = run_stack("b200", tmp_path_factory.mktemp("s"), {**base, **stack}, known=False)
    assert result.run.records


def test_a_parked_gpu_pool_with_the_gates_on_plans_no_gate() -> None:
    """The corner the issue names: a fixed pool of 0 nodes on b200 (gates on by default)."""
    cfg = load({"gpu": {"type": "b200", "nodes": 0, "capacity": "reservation", "reservation": "r"}})
    assert cfg is not None
    assert cfg.verify_enabled
    assert plan_gates(verify_inputs(cfg), cfg.gate_settings) == []


def test_a_job_on_a_parked_pool_is_refused_and_the_smoke_s_settings_are_kept() -> None:
    """Parking stops the run on the pool, so a job still enabled is refused (stop it first);
    the smoke's settings are kept for when the pool has nodes again, and nothing is planned."""
    parked = {"type": "b200", "nodes": 0, "capacity": "reservation", "reservation": "r"}
    with pytest.raises(InvalidStackConfig) as job:
        load_stack_config(values(gpu=parked, ray={"job": {"enabled": True}}), "b200", ())
    assert job.value.key == "nemo-rl-gke:ray.job.enabled"
    smoke = {"grpoSmoke": {"enabled": True, "steps": 3}}
    cfg = load_stack_config(values(gpu=parked, verify=smoke), "b200", ())
    assert cfg.verify.grpo_smoke.enabled
    assert not cfg.gate_settings.grpo_smoke


def test_nccl_settings_on_a_one_node_pool_are_refused_and_kept_on_a_parked_one() -> None:
    """The NCCL gates need two nodes: on one they are not planned, so their settings do
    nothing (refused, as other do-nothing settings are); a parked pool keeps them."""
    one = {"type": "b200", "nodes": 1, "capacity": "reservation", "reservation": "r"}
    for gate in ("nccl", "jobNccl"):
        with pytest.raises(InvalidStackConfig) as refused:
            load_stack_config(values(gpu=one, verify={gate: {"timeoutMinutes": 30}}), "b200", ())
        assert refused.value.key == f"nemo-rl-gke:verify.{gate}"
        assert "needs two GPU nodes or more" in refused.value.problem
    parked = {**one, "nodes": 0}
    cfg = load_stack_config(values(gpu=parked, verify={"nccl": {"timeoutMinutes": 30}}), "b200", ())
    assert cfg.verify.nccl.timeout_minutes == 30

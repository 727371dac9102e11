"""The GRPO smoke gate as planned and as the program emits it (mock runtime).

What its script does with Ray's job API is in tests/verify/test_smoke_gate_script.py; what
`pulumi up` does with it against a real API server, operator and provider is in
tests/engine/test_local_cluster.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from planning.verify import SMOKE_CONFIG, SMOKE_MODEL, plan_smoke
from preflight.cli import Result
from program.verify import verify_inputs
from stack_config import InvalidStackConfig, load_stack_config
from testbed.nemo_rl_standin.config_rules import apply_overrides, load_config
from tests.harness import by_name, run_stack, stack_data, variant
from tests.planning.test_ray_nemo_rl_configs import CONFIGS, driver_command
from tests.planning.test_ray_nemo_rl_configs import pytestmark as needs_nemo_rl_configs
from tests.program.test_order import closure, named
from tests.program.test_ray_schemas import KUBERNETES_VERSION, plain
from tests.program.test_verify import config

SMOKE = {"grpoSmoke": {"enabled": True}}


@pytest.fixture(scope="module")
def b200_smoke(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """b200 with the smoke and the GRPO job on."""
    changes: dict[str, Any] = {
        "nemo-rl-gke:verify": SMOKE,
        "nemo-rl-gke:ray": {"job": {"enabled": True}},
        "nemo-rl-gke:hfToken": {"secure": "v1:ciphertext"},
    }
    return run_stack("b200", tmp_path_factory.mktemp("smoke"), variant("b200", changes))


def smoke_job(result: Result) -> dict[str, Any]:
    job: dict[str, Any] = plain(by_name(result)["ray-smoke-job"].inputs)
    return job


def env_of(job: dict[str, Any]) -> dict[str, str]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


@pytest.mark.parametrize("stack", ["dev", "b200", "h200"])
def test_the_smoke_is_off_by_default(stack: str) -> None:
    cfg = load_stack_config(dict(stack_data(stack)["config"]), stack, set())
    assert cfg.gate_settings.grpo_smoke is False


def test_the_smoke_submits_what_a_rayjob_of_the_smoke_run_would(b200_smoke: Result) -> None:
    job = smoke_job(b200_smoke)
    env = env_of(job)
    rayjob = plain(by_name(b200_smoke)["ray-job"].inputs)["spec"]
    # Same RDMA placement of the driver as the RayJob, same shell setup and script.
    assert json.loads(env["ENTRYPOINT_RESOURCES"]) == json.loads(rayjob["entrypointResources"])
    smoke_script = shlex.split(env["ENTRYPOINT"])[2]
    job_script = shlex.split(rayjob["entrypoint"])[2]
    # From the token files on (the job waits for HF_TOKEN first: its model is gated, the
    # smoke's not).
    setup = job_script.split(" && { mkdir -p ")[0]
    assert (
        smoke_script.split(" && { mkdir -p ")[0].split(" && unset HF_TOKEN WANDB_API_KEY")[1]
        == (setup.split(" && unset HF_TOKEN WANDB_API_KEY")[1])
    )
    assert setup.startswith("unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && ")
    assert smoke_script.startswith("unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && ")
    assert "uv run python examples/run_grpo.py --config examples/configs/grpo_smoke.yaml" in (
        smoke_script
    )
    assert env["RAY_DASHBOARD"] == (
        "http://nemo-rl-head-svc.$(POD_NAMESPACE).svc.cluster.local:8265"
    )


@needs_nemo_rl_configs
def test_the_smoke_overrides_pass_nemo_rl_s_own_parser_on_its_smoke_config(
    b200_smoke: Result,
) -> None:
    script = shlex.split(env_of(smoke_job(b200_smoke))["ENTRYPOINT"])[2]
    config, overrides = driver_command(script)
    assert config == SMOKE_CONFIG
    cfg = apply_overrides(load_config(CONFIGS / Path(SMOKE_CONFIG).name), overrides)
    assert cfg.grpo.max_num_steps == 3
    assert cfg.policy.model_name == SMOKE_MODEL
    assert (cfg.cluster.num_nodes, cfg.cluster.gpus_per_node) == (1, 1)
    # No checkpoint: a smoke must never resume from an earlier smoke's last step.
    assert cfg.checkpointing.enabled is False
    assert cfg.logger.log_dir.startswith("/data/nemo-rl/runs/grpo-smoke-")
    assert cfg.data.train.dataset_name == "gsm8k"
    # grpo_smoke.yaml's own batch: every generation of a step trains.
    batch = cfg.grpo.num_prompts_per_step * cfg.grpo.num_generations_per_prompt
    assert cfg.policy.train_global_batch_size == batch


def test_the_smoke_runs_after_the_raycluster_and_before_the_rayjob(b200_smoke: Result) -> None:
    waits = closure(b200_smoke)
    smoke = named(b200_smoke, "ray-smoke-job").urn
    assert named(b200_smoke, "ray-cluster").urn in waits[smoke]
    assert smoke in waits[named(b200_smoke, "ray-job").urn]


def test_the_smoke_job_fails_fast_reruns_when_unready_and_needs_no_gpu(
    b200_smoke: Result,
) -> None:
    job = smoke_job(b200_smoke)
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 3600
    assert job["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"
    pod = spec["template"]["spec"]
    head = plain(by_name(b200_smoke)["ray-cluster"].inputs)["spec"]["headGroupSpec"]
    assert pod["nodeSelector"] == head["template"]["spec"]["nodeSelector"]  # the system pool
    (container,) = pod["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert container["command"] == ["python3", "/gates/grpo_smoke.py"]
    (holder,) = pod["initContainers"]  # the verdict reaches pulumi up before the Job fails
    assert (holder["name"], holder["restartPolicy"]) == ("hold-verdict", "Always")
    assert int(env_of(job)["DEADLINE_SECONDS"]) < spec["activeDeadlineSeconds"]


def test_the_smoke_objects_match_kubernetes_openapi(b200_smoke: Result) -> None:
    for name in ("ray-smoke-job", "ray-smoke-script"):
        obj = plain(by_name(b200_smoke)[name].inputs)
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_verify_jobs_include_the_smoke(b200_smoke: Result) -> None:
    jobs = b200_smoke.run.exports["verifyJobs"].value
    assert jobs["grpo-smoke"] == smoke_job(b200_smoke)["metadata"]["name"]
    assert {"gpu-health", "rdma", "nccl", "storage"} <= set(jobs)


def test_the_smoke_reruns_when_the_platform_or_the_run_changes() -> None:
    def name(**changes: Any) -> str:
        verify = {"grpoSmoke": {"enabled": True, **changes.pop("smoke", {})}}
        cfg = config("b200", verify=verify, **changes)
        steps = cfg.verify.grpo_smoke.steps
        return plan_smoke(cfg.grpo_run, verify_inputs(cfg), steps=steps, image="py").job_name

    base = name()
    assert name() == base
    assert name(smoke={"steps": 5}) != base
    assert name(smoke={"timeoutMinutes": 90}) == base  # how long to wait is not what it proves
    gpu = dict(stack_data("b200")["config"]["nemo-rl-gke:gpu"])
    assert name(gpu={**gpu, "reservation": "another-reservation"}) != base


def test_a_smoke_on_a_pool_that_starts_at_zero_is_refused() -> None:
    data = dict(stack_data("dev")["config"])
    data["nemo-rl-gke:verify"] = {"enabled": True, **SMOKE}
    with pytest.raises(InvalidStackConfig) as refused:
        load_stack_config(data, "dev", set())
    assert "verify.grpoSmoke.enabled" in refused.value.key, str(refused.value)
    assert "gpu.autoscaling.min" in str(refused.value)

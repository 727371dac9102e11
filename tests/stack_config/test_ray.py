"""The rules of the address plan, the gate thresholds, free text that reaches other parsers
(Hydra, Hugging Face, paths, KubeRay names) and GCE's names, each refused naming its key."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Annotated, Any

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import StringConstraints, TypeAdapter, ValidationError

from planning.ray import grpo_overrides
from stack_config import InvalidStackConfig, StackConfig, load_stack_config
from stack_config.ray import MAX_RAYJOB_NAME
from tests.stack_config.test_stack import error_for, gpu, values


def refused(**changes: Any) -> InvalidStackConfig:
    return error_for(values(**changes))


def job(**fields: Any) -> dict[str, Any]:
    return {"job": {"enabled": True, **fields}}


# --- the address plan ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("network", "key", "fragment"),
    [
        ({"psaCidr": "192.168.240.0/20"}, "psaCidr", "GPU nodes route on their gVNIC and RDMA"),
        ({"psaCidr": "169.254.0.0/20"}, "psaCidr", "link-local"),
        ({"primaryCidr": "127.0.0.0/20"}, "primaryCidr", "loopback"),
        ({"podsCidr": "224.0.0.0/14"}, "podsCidr", "multicast"),
        ({"servicesCidr": "0.0.0.0/20"}, "servicesCidr", "current (local) network"),
        ({"servicesCidr": "199.36.153.0/24"}, "servicesCidr", "googleapis.com"),
        ({"gvnicCidr": "223.255.192.0/21"}, "gvnicCidr", "default RDMA plan after it reaches"),
        (
            {"rdmaCidrs": [f"169.254.{i}.0/24" for i in range(8)]},
            "rdmaCidrs[0]",
            "link-local",
        ),
    ],
)
def test_ranges_gcp_refuses_are_refused(network: dict[str, Any], key: str, fragment: str) -> None:
    err = refused(network=network, lustre={"enabled": True})
    assert err.key == f"nemo-rl-gke:network.{key}"
    assert fragment in str(err)


def test_the_default_psa_range_and_a_private_one_pass() -> None:
    load_stack_config(values(lustre={"enabled": True}), "b200")
    load_stack_config(values(lustre={"enabled": True}, network={"psaCidr": "10.8.0.0/20"}), "b200")


def test_authorized_networks_stay_within_gkes_50() -> None:
    nets = [{"name": f"n{i}", "cidr": f"203.0.{i}.0/24"} for i in range(51)]
    assert refused(network={"authorizedNetworks": nets}).key == (
        "nemo-rl-gke:network.authorizedNetworks"
    )


# --- gate thresholds ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verify", "key", "fragment"),
    [
        (
            {"nccl": {"minBusBandwidthGBPerSecond": 400}},
            "nccl.minBusBandwidthGBPerSecond",
            "more than 10% above Google's published 344.46 GB/s",
        ),
        (
            {"nccl": {"minAvgBusBandwidthGBPerSecond": 150}},
            "nccl.minAvgBusBandwidthGBPerSecond",
            "published 120.845 GB/s",
        ),
        (
            {"nccl": {"collectives": ["all_gather"], "minAllReduceBusBandwidthGBPerSecond": 200}},
            "nccl.minAllReduceBusBandwidthGBPerSecond",
            "judges all_reduce, which verify.nccl.collectives (all_gather) does not run",
        ),
        (
            {"nccl": {"collectives": ["all_reduce"], "minBusBandwidthGBPerSecond": 300}},
            "nccl.minBusBandwidthGBPerSecond",
            "judges all_gather",
        ),
        (
            {"nccl": {"collectives": ["all_gather", "all_gather"]}},
            "nccl.collectives[1]",
            "listed twice",
        ),
        (
            {"nccl": {"minBusBandwidthGbps": 300}},
            "nccl.minBusBandwidthGbps",
            "did you mean 'minBusBandwidthGBPerSecond'",
        ),
        (
            {"storage": {"bucketMinMBPerSecond": 500}},
            "storage.bucketMinMBPerSecond",
            "/data is Managed Lustre here",
        ),
    ],
)
def test_thresholds_that_cannot_do_their_job_are_refused(
    verify: dict[str, Any], key: str, fragment: str
) -> None:
    err = refused(verify=verify, lustre={"enabled": True}, bucket={"enabled": False})
    assert err.key == f"nemo-rl-gke:verify.{key}"
    assert fragment in str(err)


def test_plausible_thresholds_pass_and_reach_the_gate() -> None:
    cfg = load_stack_config(
        values(verify={"nccl": {"minBusBandwidthGBPerSecond": 370}}, lustre={"enabled": True}),
        "b200",
    )
    assert cfg.gate_settings.nccl_min_busbw == 370  # within 10% of 344.46


def test_nccl_thresholds_on_a_gpu_without_rdma_are_refused() -> None:
    l4 = {"type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "spot"}
    err = refused(gpu=l4, verify={"enabled": True, "nccl": {"minBusBandwidthGBPerSecond": 10}})
    assert err.key == "nemo-rl-gke:verify.nccl.minBusBandwidthGBPerSecond"
    assert "only on GPUs with RDMA NICs" in str(err)
    err = refused(gpu=l4, verify={"storage": {"minFraction": 0.9}})
    assert err.key == "nemo-rl-gke:verify.storage.minFraction"


# --- free text that reaches Hydra, Hugging Face, paths and KubeRay ------------------------


@pytest.mark.parametrize(
    ("ray", "key", "fragment"),
    [
        (job(runsDir="/data/../etc"), "runsDir", "should match pattern"),
        (job(runsDir="/data/./x"), "runsDir", "should match pattern"),
        (job(runsDir="/data/x\n"), "runsDir", "should match pattern"),
        (job(runsDir="/data/${oc.env:HF_TOKEN}"), "runsDir", "should match pattern"),
        (job(config="examples/configs/../../etc/x.yaml"), "config", "should match pattern"),
        (job(model="meta-llama/${oc.env:HF_TOKEN}"), "model", "not a Hugging Face model id"),
        (job(model="org/name--x"), "model", "not a Hugging Face model id"),
        (job(model="org/.hidden"), "model", "not a Hugging Face model id"),
        (job(model="org/name.git"), "model", "not a Hugging Face model id"),
        (job(model="org/a/b"), "model", "not a Hugging Face model id"),
        (job(model="Qwen/Qwen3-0.6B\n"), "model", "not a Hugging Face model id"),
        (job(wandbProject="true"), "wandbProject", "would reach NeMo RL as a boolean"),
        (job(wandbProject="NaN"), "wandbProject", "as a number"),
        (job(wandbProject="a,b"), "wandbProject", "should match pattern"),
        (job(name="a" * 39), "name", "should match pattern"),
        (job(name="a" * 38, runId="abcdefghij"), "name", "KubeRay refuses RayJob names"),
        (job(name="a" * 38, attempt=2), "name", "KubeRay refuses RayJob names over 47"),
    ],
)
def test_free_text_other_parsers_would_misread_is_refused(
    ray: dict[str, Any], key: str, fragment: str
) -> None:
    err = refused(ray=ray)
    assert err.key == f"nemo-rl-gke:ray.job.{key}"
    assert fragment in str(err)


def test_the_longest_job_name_fits_kuberay() -> None:
    cfg = load_stack_config(
        values(ray=job(name="a" * 38, model="Qwen/Qwen3-0.6B")), "b200"
    )  # 38 + '-' + an 8-digit run id
    assert len(cfg.grpo_run.rayjob_name) == MAX_RAYJOB_NAME


HOSTILE = st.sampled_from(
    [
        "true",
        "null",
        "NaN",
        "-inf",
        "1e5",
        "${oc.env:HF_TOKEN}",
        "a,b",
        "a b",
        "'q'",
        "x\n",
        "..",
        "/data/../etc",
        "/data/./x",
        "/data//x",
        "org/../x",
        "org/name.git",
        "a" * 60,
    ]
)


def _text(pattern: str) -> st.SearchStrategy[str]:
    """Values a careless or hostile user might write: well-formed ones from the pattern,
    known troublemakers, and arbitrary text."""
    return st.one_of(st.from_regex(pattern, fullmatch=True), HOSTILE, st.text(max_size=30))


def _loaded_or_refused_on_the_job(vals: dict[str, str], tokens: set[str]) -> StackConfig | None:
    """The config, or None when refused - then naming a field of the job."""
    try:
        return load_stack_config(vals, "b200", tokens)
    except InvalidStackConfig as err:
        key = err.key
    assert key.startswith("nemo-rl-gke:ray.job."), key
    return None


@settings(max_examples=150, deadline=None)
@given(
    model=_text(r"[A-Za-z0-9_]{1,12}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}[A-Za-z0-9_]"),
    runs_dir=_text(r"/data(/[A-Za-z0-9_.-]{1,10}){1,4}"),
    name=_text(r"[a-z][-a-z0-9]{0,50}"),
    run_id=_text(r"[a-z0-9][-a-z0-9]{0,9}"),
    project=_text(r"[A-Za-z0-9_.-]{1,20}"),
)
def test_every_accepted_value_reaches_hydra_and_kuberay_intact(
    model: str, runs_dir: str, name: str, run_id: str, project: str
) -> None:
    """Whatever the job's free text is, the config is refused naming a field of the job, or
    every value reaches Hydra's own override parser as exactly itself (no interpolation, no
    sweep, no bool or number), its paths stay inside /data and the RayJob name fits KubeRay."""
    fields = {
        "model": model,
        "runsDir": runs_dir,
        "name": name,
        "runId": run_id,
        "wandb": True,
        "wandbProject": project,
    }
    vals = values(ray=job(**fields))
    tokens = {"nemo-rl-gke:hfToken", "nemo-rl-gke:wandbApiKey"}
    vals.update(dict.fromkeys(tokens, "a-secret"))
    cfg = _loaded_or_refused_on_the_job(vals, tokens)
    if cfg is None:
        return
    run = cfg.grpo_run
    expected = {
        "policy.model_name": run.model,
        "checkpointing.checkpoint_dir": run.checkpoint_dir,
        "logger.log_dir": run.log_dir,
        "logger.wandb.project": run.wandb_project,
        "logger.wandb.name": run.name,
    }
    parsed = {
        o.key_or_group: o
        for o in OverridesParser.create().parse_overrides(overrides=grpo_overrides(run))
    }
    for key, raw in expected.items():
        override = parsed[key]
        assert not override.is_sweep_override(), key
        assert override.value() == raw, (key, raw)
        assert "$" not in raw
    for path in (run.checkpoint_dir, run.log_dir):
        assert posixpath.normpath(path) == path
        assert path.startswith("/data/")
    assert len(run.rayjob_name) <= MAX_RAYJOB_NAME


# --- GCE names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reservation", "ok"),
    [
        ("res-a", True),
        ("res-a/reservationBlocks/block-1", True),
        ("res-a/reservationBlocks/block-1/reservationSubBlocks/sub-0", True),
        ("res-a/reservationBlocks/-block", False),  # a block name starts with a letter
        ("res-a/reservationBlocks/" + "b" * 64, False),  # at most 63
        ("Res-a", False),
        ("res-a/reservationSubBlocks/sub-0", False),
        ("res-a\n", False),
    ],
)
def test_reservation_block_and_sub_block_names_are_gce_names(reservation: str, ok: bool) -> None:
    vals = values(gpu=gpu(reservation=reservation))
    if ok:
        assert load_stack_config(vals, "b200").gpu.reservation == reservation
        return
    assert error_for(vals).key == "nemo-rl-gke:gpu.reservation"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_chart_path_that_is_no_chart_is_refused_without_blocking_or_a_traceback(
    tmp_path: Path,
) -> None:
    fifo_chart = tmp_path / "fifo"
    fifo_chart.mkdir()
    os.mkfifo(fifo_chart / "Chart.yaml")  # reading it would wait for a writer forever
    cases = {"fifo": fifo_chart}
    for name, text in (("binary", b"\xff\xfe"), ("deep", b"[" * 5000 + b"]" * 5000)):
        cases[name] = tmp_path / name
        cases[name].mkdir()
        (cases[name] / "Chart.yaml").write_bytes(text)
    for path in (*cases.values(), "/dev/zero", tmp_path / "missing"):
        err = refused(ray={"chartPath": str(path)})
        assert err.key == "nemo-rl-gke:ray.chartPath"
        assert "is not a Helm chart" in str(err)


def _patterns() -> list[str]:
    """Every `pattern` of every config model (pydantic's `pattern`, its Rust regex)."""
    from stack_config.base import ConfigModel

    found: set[str] = set()
    todo: list[type[ConfigModel]] = [StackConfig]
    seen: set[type[ConfigModel]] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for field in model.model_fields.values():
            for meta in field.metadata:
                if getattr(meta, "pattern", None):
                    found.add(str(meta.pattern))
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                for inner in (arg, *getattr(arg, "__args__", ())):
                    if isinstance(inner, type) and issubclass(inner, ConfigModel):
                        todo.append(inner)
    return sorted(found)


PATTERNS = _patterns()


def test_the_models_have_patterns_to_check() -> None:
    assert len(PATTERNS) >= 10, PATTERNS


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_every_pattern_is_a_full_match(data: st.DataObject) -> None:
    """A value the pattern accepts is refused with a trailing newline (or anything after it):
    pydantic's Rust regex anchors `$` at the very end, where Python's `re` would not."""
    pattern = data.draw(st.sampled_from(PATTERNS))
    value = data.draw(st.from_regex(pattern, fullmatch=True))
    adapter: TypeAdapter[str] = TypeAdapter(Annotated[str, StringConstraints(pattern=pattern)])
    assert adapter.validate_python(value) == value
    for tail in ("\n", "\n" + value, "\r\n"):
        with pytest.raises(ValidationError):
            adapter.validate_python(value + tail)


HF = "nemo-rl-gke:hfToken"

# --- sizes NeMo RL can shard ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "key", "sizes"),
    [
        ({"ray": job(gpusPerNode=6)}, "ray.job.gpusPerNode", "2 nodes x 6 GPUs"),
        ({"gpu": gpu(nodes=3), "ray": job()}, "gpu.nodes", "3 nodes x 8 GPUs"),
        ({"gpu": gpu(nodes=5), "ray": job(nodes=5)}, "ray.job.nodes", "5 nodes x 8 GPUs"),
    ],
)
def test_a_job_whose_gpus_do_not_split_the_batch_is_refused(
    changes: dict[str, Any], key: str, sizes: str
) -> None:
    with pytest.raises(InvalidStackConfig) as info:
        load_stack_config(values(hfToken="hf_not_real", **changes), "b200", [HF])
    err = info.value
    assert err.key == f"nemo-rl-gke:{key}"
    message = str(err)
    assert sizes in message
    assert "does not divide examples/configs/grpo_math_8B.yaml's batch of 512" in message
    # The sizes that do work, whole nodes first.
    assert "1, 2 or 4 nodes x 8 GPUs" in message or "1 or 2 nodes x 8 GPUs" in message


@pytest.mark.parametrize(
    "ray",
    [
        job(),  # 2 x 8
        job(nodes=1, gpusPerNode=4),
        job(config="examples/configs/grpo_math_1B.yaml", gpusPerNode=2),
        # A recipe whose sizes the project does not know is not judged.
        job(config="examples/configs/my_recipe.yaml", gpusPerNode=6),
        {"job": {"enabled": False, "gpusPerNode": 6}},  # no run, nothing to shard
    ],
)
def test_sizes_that_split_the_batch_or_are_not_known_pass(ray: dict[str, Any]) -> None:
    load_stack_config(values(hfToken="hf_not_real", ray=ray), "b200", [HF])


def test_a_run_asks_for_the_epochs_its_steps_need() -> None:
    cfg = load_stack_config(values(hfToken="hf_not_real", ray=job(steps=500)), "b200", [HF])
    overrides = grpo_overrides(cfg.grpo_run)
    # GSM8K's 7,473 rows at 64 prompts a step: 116 steps an epoch, so 500 steps take 5.
    assert "grpo.max_num_steps=500" in overrides
    assert "grpo.max_num_epochs=5" in overrides


@pytest.mark.parametrize("seconds", [0, 59, 7 * 24 * 3600 + 1])
def test_a_start_deadline_that_would_fail_every_run_or_never_fire_is_refused(seconds: int) -> None:
    """Below a minute no run starts (nodes, image pull); past a week it never frees nodes."""
    err = refused(ray={"job": {"preRunningDeadlineSeconds": seconds}})
    assert err.key == "nemo-rl-gke:ray.job.preRunningDeadlineSeconds"


def test_the_start_deadline_reaches_the_run_s_plan() -> None:
    cfg = load_stack_config(values(ray={"job": {"preRunningDeadlineSeconds": 900}}), "dev", [])
    assert cfg.ray.job.pre_running_deadline_seconds == 900
    assert load_stack_config(values(), "dev", []).ray.job.pre_running_deadline_seconds == 3600

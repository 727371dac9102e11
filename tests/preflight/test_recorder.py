"""Masking: only secret values become [secret]; the rest of a spec stays readable."""

from __future__ import annotations

from pulumi.runtime.rpc import UNKNOWN

from preflight.recorder import RESOURCE_SIG, SECRET_SIG, SIG_KEY, mask


def test_one_secret_env_var_does_not_hide_the_spec() -> None:
    spec = {
        "containers": [
            {
                "name": "worker",
                "env": [
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                    {"name": "HF_TOKEN", "value": {SIG_KEY: SECRET_SIG, "value": "hf_live_token"}},
                ],
            }
        ]
    }
    masked = mask(spec)
    env = masked["containers"][0]["env"]
    assert env[0] == {"name": "NCCL_DEBUG", "value": "INFO"}
    assert env[1] == {"name": "HF_TOKEN", "value": "[secret]"}
    assert "hf_live_token" not in repr(masked)


def test_whole_secret_map_is_one_mask() -> None:
    assert mask({"data": {SIG_KEY: SECRET_SIG, "value": {"token": "x"}}}) == {"data": "[secret]"}


def test_unknowns_and_resource_refs() -> None:
    ref = {SIG_KEY: RESOURCE_SIG, "urn": "urn:pulumi:s::p::t::n", "id": "i"}
    assert mask({"a": UNKNOWN, "b": ref}) == {"a": "[unknown]", "b": "urn:pulumi:s::p::t::n"}


def test_recorded_inputs_carry_the_provider_s_check_defaults() -> None:
    """Policies see a resource's inputs after the provider's Check (the engine analyzes the
    checked inputs): a cluster without `deletion_protection` is deletion-protected by the
    provider's default, and the protection policy sees that."""
    import pulumi_gcp as gcp
    from pulumi_policy import EnforcementLevel

    from policies.data_protection import protect_stateful_resources
    from preflight.policy_runner import evaluate, reconcile_config
    from tests.harness import run_component

    def build() -> None:
        gcp.container.Cluster("c", name="c", location="us-central1")
        gcp.container.Cluster(
            "open", name="open", location="us-central1", deletion_protection=False
        )

    records, _ = run_component(build)
    assert records["c"].inputs["deletionProtection"] is True
    assert records["c"].inputs["enableShieldedNodes"] is True
    assert records["open"].inputs["deletionProtection"] is False
    config = reconcile_config([protect_stateful_resources], {})
    _, violations = evaluate(
        list(records.values()),
        [protect_stateful_resources],
        config,
        "pack",
        "0.0.1",
        protect_stateful_resources.enforcement_level or EnforcementLevel.MANDATORY,
    )
    assert [v.urn.rsplit("::", 1)[-1] for v in violations if v.urn] == ["open"]

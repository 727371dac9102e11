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

"""Keys that do nothing, secrets where the program would show them, credentials in plain
text, labels past GCP's limit, and messages that stay one bounded line whatever the values.

The loader sees what the engine passes the program (a flat map of strings and the secret
keys), so these hold under the real CLI as under preflight."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stack_config import InvalidStackConfig, load_stack_config
from stack_config.namespaces import gcp_keys
from tests.stack_config.test_stack import values

SECRET = "s3cr3t-value-never-shown"  # noqa: S105 - a fake, grepped for


def refused(vals: dict[str, str], secret_keys: tuple[str, ...] = ()) -> InvalidStackConfig:
    with pytest.raises(InvalidStackConfig) as info:
        load_stack_config(vals, "b200", secret_keys)
    message = str(info.value)
    assert "\n" not in message, message
    assert len(message) < 1200, message
    assert SECRET not in message
    return info.value


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("nemo-rl-gk\u0435:gpu", "did you mean nemo-rl-gke:gpu?"),  # Cyrillic e
        ("nemo_rl_gke:zone", "did you mean nemo-rl-gke:zone?"),
        ("\uff4e\uff45\uff4d\uff4f-rl-gke:zone", "did you mean nemo-rl-gke:zone?"),  # full width
        ("gpc:project", "did you mean gcp:project?"),
        ("kubernetes:kubeconfig", "nor a provider's"),
        ("gcp:projet", "did you mean gcp:project?"),
        ("pulumi:disable-default-provider", "did you mean pulumi:disable-default-providers?"),
    ],
)
def test_a_key_that_does_nothing_is_refused_naming_it(key: str, hint: str) -> None:
    vals = values()
    vals[key] = "x"
    err = refused(vals)
    assert err.key == key.encode("ascii", "backslashreplace").decode()
    assert hint in str(err)


def test_the_provider_and_engine_keys_the_program_uses_are_accepted() -> None:
    assert {"project", "region", "zone", "credentials", "defaultLabels"} <= gcp_keys()
    vals = values()
    vals["gcp:zone"] = "us-central1-b"
    vals["pulumi:disable-default-providers"] = '["kubernetes"]'
    vals["pulumi:tags"] = '{"team":"rl"}'
    load_stack_config(vals, "b200")


@pytest.mark.parametrize("key", ["gcp:credentials", "gcp:accessToken"])
def test_a_plaintext_provider_credential_is_refused_like_the_programs_own(key: str) -> None:
    vals = values()
    vals[key] = SECRET
    err = refused(vals)
    assert err.key == key
    assert f"pulumi config set --secret {key}" in err.fix
    load_stack_config(vals, "b200", secret_keys=(key,))  # as a secret it is the provider's


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nemo-rl-gke:labels", {"team": SECRET}),
        ("nemo-rl-gke:ray", {"job": {"model": SECRET}}),
        ("nemo-rl-gke:gpu", {"type": "b200", "nodes": 2, "capacity": "reservation",
                             "reservation": SECRET}),
        ("gcp:project", SECRET),
        ("nemo-rl-gke:name", SECRET),
    ],
)  # fmt: skip
def test_a_secret_where_the_program_would_show_it_is_refused_without_its_value(
    key: str, value: Any
) -> None:
    vals = values()
    vals[key] = value if isinstance(value, str) else json.dumps(value)
    err = refused(vals, secret_keys=(key,))
    assert err.key == key
    assert "holds a secret" in err.problem


def test_deep_nesting_from_the_engine_is_refused_not_a_traceback() -> None:
    vals = values()
    vals["nemo-rl-gke:labels"] = "[" * 100_000 + "]" * 100_000
    err = refused(vals)
    assert err.key == "nemo-rl-gke:labels"
    assert "nested" in err.problem


def test_a_huge_value_is_shown_cut_short() -> None:
    vals = values()
    vals["nemo-rl-gke:zone"] = "us-central1-b\n" + "x" * 2_000_000
    err = refused(vals)
    assert err.key == "nemo-rl-gke:zone"
    assert "\\n" in str(err)  # the newline is escaped, not printed


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ({"team\n": "rl"}, "label key 'team\\n' is invalid"),  # `$` would let this through
        ({"team": "rl\n"}, "label value 'rl\\n' is invalid"),
        ({"app": "mine"}, "the program sets label app itself"),
        ({f"k{i}": "v" for i in range(62)}, "over GCP's limit of 64"),
    ],
)
def test_labels_gcp_would_refuse_are_refused(labels: dict[str, str], fragment: str) -> None:
    err = refused(values(labels=labels))
    assert err.key.startswith("nemo-rl-gke:labels")
    assert fragment in str(err)


def test_labels_count_the_providers_default_labels_and_attribution() -> None:
    mine = {f"k{i}": "v" for i in range(58)}
    load_stack_config(values(labels=mine), "b200")  # 3 + 58 + attribution = 62
    vals = values(labels=mine)
    vals["gcp:defaultLabels"] = json.dumps({f"d{i}": "v" for i in range(3)})
    err = refused(vals)
    assert "resources would carry 65 labels" in str(err)
    vals["gcp:addPulumiAttributionLabel"] = "false"
    load_stack_config(vals, "b200")  # 64 exactly

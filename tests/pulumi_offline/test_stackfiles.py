"""Reading Pulumi.yaml + Pulumi.<stack>.yaml the way the CLI does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pulumi_offline.config_values import SECRET_PLACEHOLDER
from pulumi_offline.stackfiles import (
    StackFileError,
    read_project,
    read_stack,
    stack_name_from_file,
)
from tests.harness import REPO, STACKS


def write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


REQUIRED = {"nemo-rl-gke:zone": "us-central1-b", "nemo-rl-gke:gpu": {"type": "l4", "nodes": 1}}
"""The keys Pulumi.yaml declares without a default: every stack file must set them."""


def test_project_defaults_then_stack_values(tmp_path: Path) -> None:
    project = read_project(REPO)
    stack = write(tmp_path, "Pulumi.x.yaml", {"config": {"gcp:project": "p-123456", **REQUIRED}})
    values = read_stack(project, stack).values
    assert values["nemo-rl-gke:protect"] == "true"  # Pulumi.yaml default
    assert values["nemo-rl-gke:name"] == ""  # "" = nemo-rl-<stack>, resolved by the loader
    assert values["nemo-rl-gke:network"] == "{}"  # object defaults travel as JSON
    override = write(
        tmp_path, "Pulumi.y.yaml", {"config": {"nemo-rl-gke:protect": False, **REQUIRED}}
    )
    assert read_stack(project, override).values["nemo-rl-gke:protect"] == "false"


def test_declared_keys_without_default_are_required_like_the_cli(tmp_path: Path) -> None:
    # pkg/workspace/config.go: "Stack 'x' is missing configuration values ..." before the
    # program runs, for keys of the project's namespace with neither default nor value.
    project = read_project(REPO)
    stack = write(tmp_path, "Pulumi.m.yaml", {"config": {"gcp:project": "p-123456"}})
    with pytest.raises(StackFileError) as info:
        read_stack(project, stack)
    message = str(info.value)
    assert "missing configuration values nemo-rl-gke:zone, nemo-rl-gke:gpu" in message
    assert "pulumi config set nemo-rl-gke:zone VALUE -s m" in message
    required = {
        f"nemo-rl-gke:{key}"
        for key, decl in yaml.safe_load((REPO / "Pulumi.yaml").read_text())["config"].items()
        if "default" not in decl and "value" not in decl
    }
    assert required == set(REQUIRED)


def test_objects_are_json_and_secure_values_become_placeholder_secrets(tmp_path: Path) -> None:
    project = read_project(REPO)
    stack = write(
        tmp_path,
        "Pulumi.s.yaml",
        {
            "config": {
                **REQUIRED,
                "nemo-rl-gke:gpu": {"type": "l4", "nodes": 1},
                "nemo-rl-gke:hfToken": {"secure": "v1:AAAA"},
            }
        },
    )
    read = read_stack(project, stack)
    assert json.loads(read.values["nemo-rl-gke:gpu"]) == {"type": "l4", "nodes": 1}
    assert read.values["nemo-rl-gke:hfToken"] == SECRET_PLACEHOLDER
    assert read.secret_keys == ["nemo-rl-gke:hfToken"]
    plain = write(tmp_path, "Pulumi.p.yaml", {"config": {**REQUIRED, "nemo-rl-gke:hfToken": "x"}})
    assert read_stack(project, plain).secret_keys == []  # the loader refuses it (exit 2)


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("nemo-rl-gke:protect", "perhaps", False),
        ("nemo-rl-gke:protect", "false", True),  # `pulumi config set` writes strings
        ("nemo-rl-gke:protect", True, True),
        ("nemo-rl-gke:gpu", "b200", False),  # object keys must be maps
        ("nemo-rl-gke:network", ["10.0.0.0/20"], False),
        ("nemo-rl-gke:labels", {"team": "rl"}, True),
        ("nemo-rl-gke:zone", 5, True),  # any scalar is a string to the CLI
        ("nemo-rl-gke:zone", {"a": 1}, False),
    ],
)
def test_declared_types_are_checked_like_the_cli(
    tmp_path: Path, key: str, value: object, ok: bool
) -> None:
    project = read_project(REPO)
    path = write(tmp_path, "Pulumi.t.yaml", {"config": {**REQUIRED, key: value}})
    if ok:
        read_stack(project, path)
        return
    with pytest.raises(StackFileError, match=f"{key} must be an? "):
        read_stack(project, path)


def test_a_declared_secret_key_in_plain_text_is_refused(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "demo",
                "runtime": "python",
                "config": {"token": {"type": "string", "secret": True}},
            }
        )
    )
    project = read_project(tmp_path)
    plain = write(tmp_path, "Pulumi.d.yaml", {"config": {"demo:token": "plain"}})
    with pytest.raises(StackFileError, match="must be encrypted"):
        read_stack(project, plain)
    secure = write(tmp_path, "Pulumi.e.yaml", {"config": {"demo:token": {"secure": "v1:x"}}})
    assert read_stack(project, secure).secret_keys == ["demo:token"]


def test_bare_and_old_form_keys_are_namespaced_like_the_cli(tmp_path: Path) -> None:
    # sdk/go/common/workspace/loaders.go namespaces a bare key with the project;
    # config.ParseKey reads `ns:config:name` as `ns:name` and refuses more colons.
    project = read_project(REPO)
    path = write(
        tmp_path,
        "Pulumi.n.yaml",
        {"config": {"zone": "us-central1-b", "nemo-rl-gke:config:gpu": {"type": "l4"}}},
    )
    values = read_stack(project, path).values
    assert values["nemo-rl-gke:zone"] == "us-central1-b"
    assert json.loads(values["nemo-rl-gke:gpu"]) == {"type": "l4"}
    bad = write(tmp_path, "Pulumi.b.yaml", {"config": {**REQUIRED, "a:b:c:d": 1}})
    with pytest.raises(StackFileError, match="could not parse a:b:c:d as a configuration key"):
        read_stack(project, bad)
    twice = write(
        tmp_path,
        "Pulumi.t.yaml",
        {"config": {**REQUIRED, "protect": True, "nemo-rl-gke:protect": False}},
    )
    with pytest.raises(StackFileError, match="are the same key"):
        read_stack(project, twice)


def test_a_top_level_key_that_does_nothing_is_refused(tmp_path: Path) -> None:
    # The CLI ignores `confg:` (a typo): none of the stack's settings would apply.
    path = tmp_path / "Pulumi.c.yaml"
    path.write_text("confg:\n  nemo-rl-gke:zone: us-central1-b\n")
    with pytest.raises(
        StackFileError, match=r"top-level key confg does nothing.*did you mean config"
    ):
        read_stack(read_project(REPO), path)


def test_a_secret_is_what_the_cli_decrypts_and_taints_its_whole_key(tmp_path: Path) -> None:
    project = read_project(REPO)
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(
        "config:\n"
        "  nemo-rl-gke:zone: us-central1-b\n"
        "  nemo-rl-gke:gpu: {type: l4, nodes: 1}\n"
        "  nemo-rl-gke:labels:\n"
        "    team: {secure: v1:AAAA}\n"
        "  nemo-rl-gke:hfToken: {secure: 5}\n"  # not a string: a plain object to the CLI
    )
    read = read_stack(project, path)
    assert json.loads(read.values["nemo-rl-gke:labels"]) == {"team": SECRET_PLACEHOLDER}
    assert read.secret_keys == ["nemo-rl-gke:labels"]
    assert json.loads(read.values["nemo-rl-gke:hfToken"]) == {"secure": 5}


def test_values_reach_the_program_as_the_cli_passes_them(tmp_path: Path) -> None:
    project = read_project(REPO)
    path = tmp_path / "Pulumi.v.yaml"
    path.write_text(
        "config:\n"
        "  nemo-rl-gke:zone: us-central1-b\n"
        "  nemo-rl-gke:gpu: {type: l4, nodes: 0x2}\n"
        "  nemo-rl-gke:name: 010\n"
        "  nemo-rl-gke:cluster: {maintenance: {windowStart: 2026-01-03T04:00:00Z}}\n"
        "  nemo-rl-gke:verify: {storage: {minFraction: 1.0}}\n"
        "  gcp:project: 18446744073709551615\n"
        "  nemo-rl-gke:labels: {big: 18446744073709551615}\n"
    )
    values = read_stack(project, path).values
    assert values["nemo-rl-gke:gpu"] == '{"nodes":2,"type":"l4"}'
    assert values["nemo-rl-gke:name"] == "8"
    assert (
        values["nemo-rl-gke:cluster"]
        == '{"maintenance":{"windowStart":"2026-01-03 04:00:00 +0000 UTC"}}'
    )
    assert values["nemo-rl-gke:verify"] == '{"storage":{"minFraction":1}}'
    # A uint64: passed as written at the top level, as a float64 inside an object (the CLI
    # stores objects as JSON and reads numbers back as int64 or float64; the real CLI agrees,
    # tests/engine/test_stack_files.py).
    assert values["gcp:project"] == "18446744073709551615"
    assert values["nemo-rl-gke:labels"] == '{"big":18446744073709552000}'


def test_yes_is_not_a_boolean_to_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.y.yaml"
    path.write_text("config:\n  nemo-rl-gke:protect: yes\n")
    with pytest.raises(StackFileError, match="nemo-rl-gke:protect must be a boolean"):
        read_stack(read_project(REPO), path)


def test_a_number_json_cannot_carry_is_refused_like_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.f.yaml"
    path.write_text("config:\n  nemo-rl-gke:verify: {storage: {minFraction: .nan}}\n")
    with pytest.raises(StackFileError, match="json: unsupported value: NaN"):
        read_stack(read_project(REPO), path)


def test_a_type_error_never_shows_a_secret(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.z.yaml"
    path.write_text("config:\n  nemo-rl-gke:zone: [{secure: v1:CIPHERTEXT}]\n")
    with pytest.raises(StackFileError) as info:
        read_stack(read_project(REPO), path)
    assert "must be a string" in str(info.value)
    assert "CIPHERTEXT" not in str(info.value)
    assert "[secret]" in str(info.value)


def test_stack_name_comes_from_the_file_name() -> None:
    assert stack_name_from_file(Path("/x/Pulumi.b200.yaml")) == "b200"
    with pytest.raises(StackFileError, match=r"Pulumi\.<stack>\.yaml"):
        stack_name_from_file(Path("b200.yaml"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_sets_location_and_disables_default_kubernetes(stack: str) -> None:
    data = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    for key in ("gcp:project", "gcp:region", "nemo-rl-gke:zone"):
        assert key in data, f"{stack} must set {key} itself"
    assert "kubernetes" in data["pulumi:disable-default-providers"]
    # committed stack files carry no secrets (a secure: value needs the CLI to make)
    assert "secure" not in json.dumps(data)
    assert "placeholder" in json.dumps(data) or stack == "dev"


def test_pulumi_yaml_documents_every_key() -> None:
    """Every model field is declared (typed) in Pulumi.yaml and described in its template."""
    from stack_config import SECRET_KEYS, StackConfig

    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    template = project["template"]["config"]
    declared = project["config"]
    assert project["runtime"]["options"]["toolchain"] == "uv"
    assert "typechecker" not in project["runtime"]["options"]  # no cold mypy before each run
    for key in SECRET_KEYS:
        # Not declared: a declared key without default is required, and a secret key cannot
        # have a default. The loader refuses plaintext values instead.
        assert key not in declared
        assert f"nemo-rl-gke:{key}" in template
    kinds = {"string": str, "boolean": bool, "object": dict}
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        full = key if ":" in key else f"nemo-rl-gke:{key}"
        assert full in template, f"{full} undocumented"
        if ":" not in key:
            assert key in declared, f"{key} is not declared under config: in Pulumi.yaml"
            decl = declared[key]
            expected = (
                "object" if _nested_model(field) or field.annotation is dict[str, str] else None
            )
            assert decl["type"] == (expected or decl["type"])
            if "default" in decl:
                assert isinstance(decl["default"], kinds[decl["type"]])
        model = _nested_model(field)
        if model is None:
            continue
        text = template[full]["description"]
        for path, alias, sub_field in _fields(model):
            assert alias in text, f"{key}.{path} missing from Pulumi.yaml"
            assert sub_field.description, f"{key}.{path} needs a description"


def test_every_secret_looking_setting_is_a_secret_key() -> None:
    """A future token or key must join SECRET_KEYS, so plaintext values are refused for it."""
    from stack_config import SECRET_KEYS

    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    looks_secret = re.compile(r"(token|apikey|password|secret|credential)", re.I)
    for full in project["template"]["config"]:
        namespace, key = full.split(":", 1)
        if namespace == "nemo-rl-gke" and looks_secret.search(key):
            assert key in SECRET_KEYS, f"{key} looks secret but is not in SECRET_KEYS"


def _nested_model(field: Any) -> Any:
    from pydantic import BaseModel

    for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _fields(model: Any, prefix: str = "") -> list[tuple[str, str, Any]]:
    found = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        found.append((prefix + alias, alias, field))
        inner = _nested_model(field)
        if inner is not None:
            found += _fields(inner, f"{prefix}{alias}.")
    return found


def test_a_secret_is_located_at_its_leaf_key() -> None:
    from pulumi_offline.config_values import secure_path

    secret = {"secure": "v1:x"}
    assert secure_path({"job": {"model": secret}}, "p:ray") == "p:ray.job.model"
    assert secure_path({"a": [1, {"b": secret}]}, "p:k") == "p:k.a[1].b"
    assert secure_path(secret, "p:hfToken") == "p:hfToken"
    assert secure_path({"secure": 5}, "p:k") is None  # not a secret to the CLI

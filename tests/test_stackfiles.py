"""Reading Pulumi.yaml + Pulumi.<stack>.yaml the way the CLI does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight.stackfiles import (
    SECRET_PLACEHOLDER,
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


def test_project_defaults_then_stack_values(tmp_path: Path) -> None:
    project = read_project(REPO)
    stack = write(tmp_path, "Pulumi.x.yaml", {"config": {"gcp:project": "p-123456"}})
    values = read_stack(project, stack).values
    assert values["nemo-rl-gke:protect"] == "true"  # Pulumi.yaml default
    override = write(tmp_path, "Pulumi.y.yaml", {"config": {"nemo-rl-gke:protect": False}})
    assert read_stack(project, override).values["nemo-rl-gke:protect"] == "false"


def test_objects_are_json_and_secure_values_become_placeholder_secrets(tmp_path: Path) -> None:
    project = read_project(REPO)
    stack = write(
        tmp_path,
        "Pulumi.s.yaml",
        {
            "config": {
                "nemo-rl-gke:gpu": {"type": "l4", "nodes": 1},
                "nemo-rl-gke:hfToken": {"secure": "v1:AAAA"},
            }
        },
    )
    read = read_stack(project, stack)
    assert json.loads(read.values["nemo-rl-gke:gpu"]) == {"type": "l4", "nodes": 1}
    assert read.values["nemo-rl-gke:hfToken"] == SECRET_PLACEHOLDER
    assert read.secret_keys == ["nemo-rl-gke:hfToken"]


def test_schema_types_are_checked(tmp_path: Path) -> None:
    project = read_project(REPO)
    bad = write(tmp_path, "Pulumi.b.yaml", {"config": {"nemo-rl-gke:protect": "perhaps"}})
    with pytest.raises(StackFileError, match="nemo-rl-gke:protect must be a boolean"):
        read_stack(project, bad)
    ok = write(tmp_path, "Pulumi.o.yaml", {"config": {"nemo-rl-gke:protect": "false"}})
    assert read_stack(project, ok).values["nemo-rl-gke:protect"] == "false"


def test_unnamespaced_stack_key_is_rejected(tmp_path: Path) -> None:
    bad = write(tmp_path, "Pulumi.n.yaml", {"config": {"zone": "us-central1-b"}})
    with pytest.raises(StackFileError, match="needs a namespace"):
        read_stack(read_project(REPO), bad)


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
    """Every model field appears in Pulumi.yaml: typed schema or the template's description."""
    from stack_config.models import SECRET_KEYS, StackConfig

    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    template = project["template"]["config"]
    assert project["runtime"]["options"]["toolchain"] == "uv"
    for key in SECRET_KEYS:
        assert project["config"][key]["secret"] is True
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        full = key if ":" in key else f"nemo-rl-gke:{key}"
        assert full in template, f"{full} undocumented"
        model = _nested_model(field)
        if model is None:
            continue
        text = template[full]["description"]
        for path, alias, sub_field in _fields(model):
            assert alias in text, f"{key}.{path} missing from Pulumi.yaml"
            assert sub_field.description, f"{key}.{path} needs a description"


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

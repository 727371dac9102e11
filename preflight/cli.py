"""`python -m preflight`: the offline preview of a stack.

Exit codes: 0 no mandatory violation, 1 mandatory violations or a program failure,
2 invalid configuration or usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from planning.bulletins import bulletin_warnings
from planning.cluster import matches
from planning.naming import PROJECT
from planning.versions import VERSIONS
from preflight import changes, org_policies
from preflight.mock_run import ProgramError, ProgramRun, run_program
from preflight.policy_runner import (
    PolicyConfigError,
    PolicyInfo,
    Violation,
    evaluate,
    load_policy_config_file,
    reconcile_config,
)
from preflight.report import (
    Summary,
    render_summary,
    render_tree,
    render_violations,
    summarize,
    to_json,
)
from program.guard import (
    REPLACEMENT_EXPORT,
    ChangeRefused,
    ReplacementRefused,
    check_day_two,
    versions_exported,
)
from pulumi_offline.fake_reservations import (
    CloudFixtures,
    FixtureError,
    assumed_for,
    assumed_versions,
    load_fixtures,
)
from pulumi_offline.stackfiles import (
    StackConfigValues,
    StackFileError,
    environment_note,
    read_project,
    read_stack,
    stack_name_from_file,
)
from stack_config import StackConfig, load_stack_config
from stack_config.errors import InvalidStackConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_VIOLATIONS, EXIT_USAGE = 0, 1, 2


@dataclass
class Result:
    """Everything a preflight produced (tests use this directly)."""

    run: ProgramRun
    policies: list[PolicyInfo]
    violations: list[Violation]
    summary: Summary
    policy_config_path: Path | None
    seconds: float
    warnings: list[str] = field(default_factory=list)
    """Policy-config entries the CLI accepts but that do nothing (likely typos)."""
    preview: bool = True
    """Computed values were unknown, as in a first `pulumi preview` (else all known)."""
    notes: list[str] = field(default_factory=list)
    """What the offline run could not prove (e.g. a reservation it did not read)."""

    @property
    def mandatory(self) -> list[Violation]:
        """Violations that would block `pulumi up`."""
        return [v for v in self.violations if v.enforcement_level == "mandatory"]

    def as_json(self) -> dict[str, object]:
        """The `--json` document."""
        mode = "preview" if self.preview else "known"
        return to_json(self.run, self.policies, self.violations, self.summary, mode)


LONG_OUTPUT = 2000
"""Outputs longer than this are elided from the printed report."""


def default_policy_config(project_dir: Path, stack: str) -> Path | None:
    """The stack's committed policy config, if there is one."""
    path = project_dir / "policies" / "config" / f"{stack}.json"
    return path if path.exists() else None


def preflight(
    stack_file: Path,
    *,
    project_dir: Path = REPO_ROOT,
    policy_config: Path | None = None,
    use_default_policy_config: bool = True,
    known: bool = False,
    previous_outputs: dict[str, Any] | None = None,
    reservations: Path | None = None,
) -> Result:
    """Load config, run the program under mocks, evaluate the policy pack.

    By default values the cloud computes are unknown, as in a first `pulumi preview`, so a
    policy that needs one reports "can't run ... during preview" here too. `known=True`
    evaluates with every value known (what the policies see after `pulumi up`).
    `previous_outputs` are what the stack's last deployment exported, as the program reads
    them back (none: a stack never deployed).
    `reservations` is a description of the reservations (and existing clusters) the program's
    reads find (`pulumi_offline.fake_reservations`); without it the stack's reservation is assumed
    to hold its pool, and a note says so.

    Raises StackFileError / InvalidStackConfig / PolicyConfigError (exit 2) and
    ProgramError (exit 1).
    """
    started = time.perf_counter()
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))
    project = read_project(project_dir)
    config = read_stack(project, stack_file)
    if project.name == PROJECT:
        # The program validates its config first thing; doing the same here, before the
        # Pulumi SDKs are loaded, refuses an invalid stack in a fraction of a second.
        load_stack_config(config.values, config.stack, config.secret_keys, config.secret_paths)
    if policy_config is None and use_default_policy_config:
        policy_config = default_policy_config(project_dir, config.stack)

    from preflight.pack_check import pack_shadowing

    shadowing = pack_shadowing(project_dir / "policies")
    if shadowing:
        raise ProgramError(shadowing[0])

    from policies.pack import PACK_ENFORCEMENT_LEVEL, PACK_NAME, PACK_VERSION, POLICIES

    reconciled = reconcile_config(POLICIES, load_policy_config_file(policy_config))
    fixtures, notes = cloud_fixtures(config, reservations)
    run = run_program(
        project_dir / project.main,
        project.name,
        config,
        region=config.values.get("gcp:region", ""),
        zone=config.values.get(f"{project.name}:zone", ""),
        preview=not known,
        previous_outputs=previous_outputs,
        fixtures=fixtures,
    )
    policies, violations = evaluate(
        run.records, POLICIES, reconciled, PACK_NAME, PACK_VERSION, PACK_ENFORCEMENT_LEVEL
    )
    return Result(
        run=run,
        policies=policies,
        violations=violations,
        summary=summarize(run),
        policy_config_path=policy_config,
        seconds=time.perf_counter() - started,
        warnings=list(reconciled.warnings),
        preview=not known,
        notes=notes,
    )


def _environment_note(stack_file: Path, err: TextIO) -> None:
    """Say so when the stack file imports ESC environments preflight cannot open."""
    try:
        environments = read_stack(read_project(REPO_ROOT), stack_file).environments
    except (StackFileError, OSError):
        return
    if environments:
        print(f"preflight: note: {environment_note(environments)}", file=err)


def cloud_fixtures(
    config: StackConfigValues, reservations: Path | None
) -> tuple[CloudFixtures, list[str]]:
    """What the program's reads of the cloud find: the description given, or a reservation
    assumed to hold the pool (with a note saying the reservation was not read)."""
    cfg = load_stack_config(config.values, config.stack, config.secret_keys, config.secret_paths)
    given = load_fixtures(reservations) if reservations is not None else None
    fixtures, notes = (given, []) if given is not None else _assumed_reservation(cfg)
    if fixtures.engine_versions is None:
        cluster = cfg.cluster
        versions = assumed_versions(
            cluster.release_channel,
            cluster.min_version,
            (cluster.system_pool.version, cfg.gpu.version),
        )
        fixtures = fixtures.model_copy(update={"engine_versions": versions})
        notes.append(
            "GKE's offered versions were not read (offline): assumed to offer"
            f" cluster.minVersion {cluster.min_version} and the pools' versions. `pulumi"
            " preview` reads them and stops on one GKE does not offer; --reservations FILE"
            " with engineVersions checks a description"
        )
    notes += [f"security: {line}" for line in security_notes(cfg)]
    return fixtures, notes


def security_notes(cfg: StackConfig) -> list[str]:
    """GKE security bulletins that affect the stack's versions (a prefix judged as the channel
    version offline runs assume), and whether the table is stale."""
    cluster = cfg.cluster
    channel = VERSIONS.gke_channel_version.value
    return bulletin_warnings(
        {
            "cluster.minVersion": cluster.min_version,
            "cluster.systemPool.version": cluster.system_pool.version,
            "gpu.version": cfg.gpu.version,
        },
        date.today(),
        resolve_prefix={cluster.min_version: channel}
        if matches(channel, cluster.min_version)
        else None,
    )


def _assumed_reservation(cfg: StackConfig) -> tuple[CloudFixtures, list[str]]:
    path = cfg.gpu.reservation_path
    if path is None or not cfg.gpu.check_reservation:
        return CloudFixtures(), []
    gpu = cfg.gpu.profile
    fixtures = assumed_for(
        name=path.name,
        block=path.block,
        sub_block=path.sub_block,
        zone=cfg.zone,
        project=cfg.gpu.reservation_project or cfg.project,
        machine_type=gpu.machine_type,
        accelerator_type=gpu.accelerator_type,
        gpus_per_node=gpu.gpus_per_node,
        nodes=cfg.gpu.max_nodes,
    )
    note = (
        f"reservation {path} was not read (offline): assumed to hold the pool. `pulumi"
        " preview` reads it and stops when it cannot; --reservations FILE checks a description"
    )
    return fixtures, [note]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m preflight",
        description="Offline preview of a nemo-rl-gke stack: runs the real program under Pulumi"
        " mocks, prints the resource tree and evaluates the policy pack. No cloud access.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    which.add_argument("--stack-file", type=Path, help="any Pulumi.<stack>.yaml file")
    parser.add_argument("--json", type=Path, help="also write the JSON report to this file")
    parser.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON (default: policies/config/<stack>.json when present)",
    )
    parser.add_argument(
        "--graph",
        type=Path,
        help="also render the resource graph (components, resources, dependencies) as .svg/.png",
    )
    parser.add_argument(
        "--known",
        action="store_true",
        help="evaluate with every computed value known (as after `pulumi up`) instead of as a"
        " new stack's first `pulumi preview`, where ids and addresses are unknown",
    )
    parser.add_argument(
        "--manifests",
        type=Path,
        help="also write every Kubernetes object (and the Pods of Ray clusters) as YAML files"
        " into this folder, with computed values resolved, for scanners such as checkov",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        help="the stack as it was: its earlier Pulumi.<stack>.yaml (e.g. from `git show`) or the"
        " --json report of an earlier preflight; lists what the change recreates and why, and"
        " exits 1 when the program would refuse it (a protected stack)",
    )
    parser.add_argument(
        "--reservations",
        type=Path,
        help="a JSON description of the reservations (and existing clusters) the program reads"
        " (see pulumi_offline/fake_reservations.py); default: the stack's reservation is assumed to"
        " hold its pool",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the result line")
    return parser


def main(
    argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Command-line entry point; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:
        return EXIT_OK if exit_.code == 0 else EXIT_USAGE
    stack_file = args.stack_file or REPO_ROOT / f"Pulumi.{args.stack or 'dev'}.yaml"
    ran = _run(args, stack_file, err)
    if isinstance(ran, int):
        return ran
    result, before = ran
    report = None
    if args.previous is not None and before is not None:
        try:
            report = _compare_with(args.previous, before, stack_file, result, args.policy_config)
        except (StackFileError, ChangeRefused) as error:
            print(f"preflight: {error}", file=err)
            return EXIT_USAGE
        except InvalidStackConfig as error:
            print(f"preflight: previous stack: {error}", file=err)
            return EXIT_USAGE
    for warning in result.warnings:
        print(f"preflight: warning: {warning}", file=err)
    for note in result.notes:
        print(f"preflight: note: {note}", file=err)
    _environment_note(stack_file, err)
    failed = _write_files(args, stack_file, result, report, err)
    if failed is not None:
        return failed
    if not args.quiet:
        _print_run(result, out)
    if report is not None:
        print(changes.render(report), file=out)
        print(file=out)
    refused = bool(report and report.refusals)
    verdict = "FAIL" if result.mandatory or refused else "PASS"
    print(
        f"preflight {result.run.stack}: {verdict} - {len(result.run.records)} resources,"
        f" {len(result.mandatory)} mandatory / {len(result.violations)} total violations"
        f" ({result.seconds:.2f}s)",
        file=out,
    )
    return EXIT_VIOLATIONS if result.mandatory or refused else EXIT_OK


def _checked_previous(args: argparse.Namespace, stack_file: Path) -> changes.Snapshot | None:
    """The snapshot of `--previous`, after checking the stack files name one stack."""
    stack = stack_name_from_file(stack_file)
    if not stack_file.exists():
        raise StackFileError(f"no stack file {stack_file}")
    if args.previous is None:
        return None
    if args.previous.suffix != ".json":
        previous_stack = stack_name_from_file(args.previous)
        if previous_stack != stack:
            raise StackFileError(
                f"{args.previous} is stack {previous_stack!r}, this is {stack!r}: compare a"
                " stack with its own earlier configuration"
            )
    try:
        return _previous_snapshot(args.previous, args.policy_config)
    except InvalidStackConfig as error:
        raise _PreviousInvalidError(str(error)) from error


class _PreviousInvalidError(Exception):
    """The `--previous` stack file's configuration is invalid."""


def _run(
    args: argparse.Namespace, stack_file: Path, err: TextIO
) -> tuple[Result, changes.Snapshot | None] | int:
    """The program's run (and the previous snapshot), or the exit code that stops here."""
    try:
        before = _checked_previous(args, stack_file)
        result = preflight(
            stack_file,
            policy_config=args.policy_config,
            known=args.known,
            # With --previous, GKE versions are judged as an update judges them (only what
            # changed); the rest of the previous deployment is compared in main.
            previous_outputs=(
                {REPLACEMENT_EXPORT: versions_exported(before.replacement_config)}
                if before is not None
                else None
            ),
            reservations=args.reservations,
        )
    except _PreviousInvalidError as error:
        print(f"preflight: previous stack: {error}", file=err)
        return EXIT_USAGE
    except (StackFileError, PolicyConfigError, FixtureError, InvalidStackConfig) as error:
        print(f"preflight: {error}", file=err)
        _environment_note(stack_file, err)
        return EXIT_USAGE
    except ProgramError as error:
        print(f"preflight: program error: {error}", file=err)
        return EXIT_VIOLATIONS
    except Exception:  # noqa: BLE001 - the program itself crashed: show where, it is a bug
        print("preflight: the program raised an unexpected error:", file=err)
        traceback.print_exc(file=err)
        return EXIT_VIOLATIONS
    return result, before


def _write_files(
    args: argparse.Namespace,
    stack_file: Path,
    result: Result,
    report: changes.ChangeReport | None,
    err: TextIO,
) -> int | None:
    """The files asked for (--manifests, --json, --graph); an exit code when one cannot be."""
    if args.manifests is not None:
        from preflight.manifests import write_manifests

        resolved = (
            result
            if args.known
            else preflight(
                stack_file,
                policy_config=args.policy_config,
                known=True,
                reservations=args.reservations,
            )
        )
        files = write_manifests(resolved.run, args.manifests)
        print(f"preflight: wrote {len(files)} manifests to {args.manifests}", file=err)
    if args.json is not None:
        document = result.as_json()
        document["orgPolicies"] = org_policies.to_json(org_policies.needs(result.run))
        if report is not None:
            document["changes"] = changes.to_json(report)
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if args.graph is not None:
        from preflight.graph import render

        try:
            render(result.run, args.graph)
        except ValueError as error:
            print(f"preflight: {error}", file=err)
            return EXIT_USAGE
    return None


def _print_run(result: Result, out: TextIO) -> None:
    """The resource tree, summary, org policies, violations and outputs."""
    cfg_note = result.policy_config_path or "schema defaults"
    print(render_tree(result.run), file=out)
    print(file=out)
    print(render_summary(result.summary), file=out)
    print(file=out)
    print(org_policies.render(org_policies.needs(result.run)), file=out)
    print(file=out)
    print(f"Policy config: {cfg_note}", file=out)
    print(render_violations(result.policies, result.violations), file=out)
    if result.run.exports:
        print(file=out)
        print("Outputs:", file=out)
        for key, export in sorted(result.run.exports.items()):
            shown = json.dumps(export.shown)
            if len(shown) > LONG_OUTPUT:  # a manifest: the JSON report holds it whole
                shown = f"<{len(shown)} characters; --json prints it>"
            print(f"  {key}: {shown}", file=out)
    print(file=out)


def _previous_snapshot(previous: Path, policy_config: Path | None) -> changes.Snapshot:
    """The stack as `previous` (a stack file or a --json report) had it."""
    if not previous.exists():
        raise StackFileError(f"no previous stack file or report {previous}")
    if previous.suffix == ".json":
        return changes.load_snapshot(previous)
    stack_name_from_file(previous)
    # Both sides with every value known: fakes derived from names, equal where unchanged.
    ran = preflight(previous, policy_config=policy_config, known=True)
    return changes.snapshot(ran.run, "known")


def _compare_with(
    previous: Path,
    before: changes.Snapshot,
    stack_file: Path,
    result: Result,
    policy_config: Path | None,
) -> changes.ChangeReport:
    """The change from `before` (read from `previous`) to this run."""
    # The change as the program plans it after reading what the previous deployment exported
    # (the Lustre claim keeps its created size); a protected stack's refusal is reported below.
    try:
        now = preflight(
            stack_file,
            policy_config=policy_config,
            known=before.mode == "known",
            previous_outputs={REPLACEMENT_EXPORT: dict(before.replacement_config)},
        )
    except ReplacementRefused:
        mode = "preview" if result.preview else "known"
        now = result
        if before.mode != mode:
            now = preflight(stack_file, policy_config=policy_config, known=before.mode == "known")
    after = changes.snapshot(now.run, before.mode)
    # What the program's guard refuses whether or not the stack is protected (the API would
    # refuse it at apply): judged on the same exported values the program compares.
    # Offline, the previous stack's GPU pool is taken to be running (it was deployed).
    check_day_two(dict(before.replacement_config), dict(after.replacement_config), lambda: True)
    return changes.compare(before, after, str(previous))

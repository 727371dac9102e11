"""Picture of a run: components (with the resources inside them) and their dependencies.

Every top-level component, and every top-level resource such as the Kubernetes provider, is
one box listing what it contains ("8 Subnetwork"). An arrow A -> B means something in B
depends on something in A (an input, `depends_on`, or the provider it uses), so boxes are laid
out left to right in creation order: whatever is in the same column can be created in
parallel. Rendered with networkx (layout) and matplotlib (SVG or PNG by file extension).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from preflight.mock_run import ProgramRun
from preflight.recorder import Record
from preflight.report import display_type

COLORS = {
    "network": "#dbeafe",
    "gke": "#dcfce7",
    "storage": "#fef3c7",
    "apps": "#fce7f3",
    "providers": "#e5e7eb",
}


@dataclass(frozen=True)
class Box:
    """One node of the picture."""

    urn: str
    title: str
    contents: tuple[str, ...]
    group: str


@dataclass(frozen=True)
class Graph:
    """Boxes and the dependency arrows between them (from -> to)."""

    boxes: dict[str, Box]
    edges: frozenset[tuple[str, str]]


def build(run: ProgramRun) -> Graph:
    """Fold the recorded resources into their top-level component and collect the arrows."""
    records = {r.urn: r for r in run.records}

    def top(record: Record) -> Record:
        while record.parent in records:
            record = records[record.parent]
        return record

    members: dict[str, list[Record]] = defaultdict(list)
    for record in run.records:
        members[top(record).urn].append(record)

    boxes: dict[str, Box] = {}
    for urn, inside in members.items():
        head = records[urn]
        shown = display_type(head.type)
        kinds = Counter(display_type(r.type).rsplit(":", 1)[-1] for r in inside if r.custom)
        module = shown.split(":")[1] if shown.count(":") == 2 else "providers"
        boxes[urn] = Box(
            urn=urn,
            title=f"{shown.rsplit(':', 1)[-1]} {head.name}",
            contents=tuple(f"{n} {kind}" for kind, n in sorted(kinds.items())),
            group="providers" if head.type.startswith("pulumi:providers:") else module,
        )

    edges: set[tuple[str, str]] = set()
    for record in run.records:
        target = top(record).urn
        sources = [d for d in record.dependencies if d in records]
        if record.provider in records:
            sources.append(record.provider)
        for dep in sources:
            source = top(records[dep]).urn
            if source != target:
                edges.add((source, target))
    return Graph(boxes=boxes, edges=frozenset(edges))


def layers(graph: Graph) -> list[list[str]]:
    """Columns in creation order (topological generations), boxes sorted inside a column."""
    import networkx as nx

    dag = nx.DiGraph()
    dag.add_nodes_from(graph.boxes)
    dag.add_edges_from(graph.edges)
    return [
        sorted(gen, key=lambda u: graph.boxes[u].title) for gen in nx.topological_generations(dag)
    ]


def render(run: ProgramRun, path: Path) -> Path:
    """Write the picture to `path` (.svg or .png)."""
    import matplotlib as mpl

    mpl.use("Agg")
    mpl.rcParams["svg.hashsalt"] = "nemo-rl-gke"  # stable ids: the SVG diffs cleanly
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if path.suffix.lower() not in (".svg", ".png"):
        raise ValueError(f"--graph writes .svg or .png, not {path.suffix or 'no extension'}")
    graph = build(run)
    columns = layers(graph)
    box_w, gap_x = 2.8, 1.2
    line_h = 0.19
    box_h = {u: 0.3 + line_h * (1 + len(b.contents)) for u, b in graph.boxes.items()}
    row_h = max(box_h.values()) + 0.35
    tallest = max(len(c) for c in columns)
    fig_w = len(columns) * (box_w + gap_x) * 0.75
    fig, ax = plt.subplots(figsize=(fig_w, tallest * row_h * 0.75 + 0.8))
    ax.set_axis_off()
    position: dict[str, tuple[float, float]] = {}
    for col, column in enumerate(columns):
        offset = (tallest - len(column)) / 2
        for row, urn in enumerate(column):
            position[urn] = (col * (box_w + gap_x), -(row + offset) * row_h)

    for source, target in sorted(graph.edges):
        (x0, y0), (x1, y1) = position[source], position[target]
        ax.add_patch(
            FancyArrowPatch(
                (x0 + box_w / 2, y0),
                (x1 - box_w / 2, y1),
                arrowstyle="-|>",
                mutation_scale=9,
                color="#6b7280",
                linewidth=0.7,
                shrinkA=0,
                shrinkB=1,
                zorder=1,
            )
        )
    for urn, (x, y) in position.items():
        box = graph.boxes[urn]
        h = box_h[urn]
        ax.add_patch(
            FancyBboxPatch(
                (x - box_w / 2, y - h / 2),
                box_w,
                h,
                boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=COLORS.get(box.group, "#ffffff"),
                edgecolor="#374151",
                linewidth=0.8,
                zorder=2,
            )
        )
        ax.text(
            x,
            y + h / 2 - 0.2,
            box.title,
            ha="center",
            va="center",
            fontsize=7.5,
            fontweight="bold",
            zorder=3,
        )
        if box.contents:
            ax.text(
                x,
                y + h / 2 - 0.2 - line_h * (len(box.contents) + 1) / 2,
                "\n".join(box.contents),
                ha="center",
                va="center",
                fontsize=6.5,
                linespacing=1.25,
                zorder=3,
            )
    ax.set_xlim(-box_w / 2 - 0.2, (len(columns) - 1) * (box_w + gap_x) + box_w / 2 + 0.2)
    ax.set_ylim(-(tallest - 1) * row_h - row_h / 2 - 0.1, row_h / 2 + 0.1)
    ax.set_title(
        f"{run.project} / {run.stack}: {len(run.records)} resources in {len(graph.boxes)} boxes"
        " (arrows: depends on; columns: creation order)",
        fontsize=9,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(
        path, bbox_inches="tight", metadata={"Date": None} if path.suffix == ".svg" else None
    )
    plt.close(fig)
    return path

"""Draws docs/img/data_flow.png, the picture in how-it-works.md (python docs/data_flow.py)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

BOXES = {
    "objects": (0.0, 0.62, "Python threads\nlists of dicts", "#dbe9f6"),
    "bytes": (0.0, 0.22, "JSONL file\n4 MiB chunks of lines", "#dbe9f6"),
    "node": (0.21, 0.42, "Node view\nobjects.rs · document.rs\nstrings read in place", "#fde9c9"),
    "pass": (0.43, 0.42, "column pass (Rust)\nZ-function suffix · tail ids ·\nresult run · last texts\nrayon, GIL released", "#fde9c9"),
    "numpy": (0.65, 0.42, "NumPy heuristics\nwhole batch at once\n_heuristics.py", "#d9f0d3"),
    "result": (0.87, 0.66, "ScanResult /\nCLI records", "#eeeeee"),
    "loops": (0.87, 0.14, "looping rows only:\nspan, signature,\nexcerpt, tokens\nattribution.rs", "#fde9c9"),
}
ARROWS = [("objects", "node"), ("bytes", "node"), ("node", "pass"), ("pass", "numpy"),
          ("numpy", "result"), ("numpy", "loops"), ("loops", "result")]
WIDTH, HEIGHT = 0.17, 0.2


def center(name: str) -> tuple[float, float]:
    x, y, _, _ = BOXES[name]
    return x + WIDTH / 2, y + HEIGHT / 2


def main() -> None:
    figure, axes = plt.subplots(figsize=(12, 4.2))
    axes.set_axis_off()
    axes.set_xlim(-0.01, 1.05)
    axes.set_ylim(0.05, 0.95)
    patches = {}
    for name, (x, y, label, color) in BOXES.items():
        patches[name] = FancyBboxPatch((x, y), WIDTH, HEIGHT, boxstyle="round,pad=0.01",
                                       facecolor=color, edgecolor="#555555")
        axes.add_patch(patches[name])
        axes.text(x + WIDTH / 2, y + HEIGHT / 2, label, ha="center", va="center", fontsize=9)
    for start, end in ARROWS:
        axes.add_patch(FancyArrowPatch(center(start), center(end), arrowstyle="-|>",
                                       mutation_scale=14, color="#333333",
                                       patchA=patches[start], patchB=patches[end]))
    axes.set_title("vthread: data flows one way, from objects or bytes to verdicts", fontsize=11)
    out = Path(__file__).resolve().parent / "img" / "data_flow.png"
    figure.savefig(out, dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()

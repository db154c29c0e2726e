"""Power over time from telemetry (live or recorded)."""

from __future__ import annotations

from pathlib import Path


def power_chart(series: list[tuple[float, float]], path: str | Path, *, simulated: bool = False) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    if series:
        t0 = series[0][0]
        ax.plot([t - t0 for t, _ in series], [p for _, p in series], lw=1.2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("module power (W)")
    ax.set_title("power" + (" — SIMULATION (virtual Jetson)" if simulated else ""))
    ax.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path

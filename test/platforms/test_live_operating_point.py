"""One truth for the operating point (issue 23, finding 3): a platform reads the point in force
from the board at every ``current_operating_point()`` (nvpmodel's status file, the cap files), so
a monitor in one process sees the caps a governor in another process set, under the governor's
own name, and a move back to the plain preset too."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from test.platforms.test_jetson_on_virtual_tree import MAXN, ORIN, nvpmodel_cmd, platform, root  # noqa: F401

from edge_roofline.platforms.grid import caps_grid
from test.nodes.rosutil import REPO


def move_board_in_another_process(tree, point_name: str) -> None:
    """What the governor does, from its own process: apply a point by name."""
    code = textwrap.dedent(f"""
        from edge_roofline.platforms.jetson.caps import CapWriter
        from edge_roofline.platforms.jetson.platform import JetsonPlatform
        p = JetsonPlatform(root={str(tree)!r}, nvpmodel_cmd=({str(nvpmodel_cmd(tree)[0])!r},),
                           writer=CapWriter(sudo_cmd=("false",)))
        p.apply(next(pt for pt in p.operating_points() if pt.name == {point_name!r}))
    """)
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_a_monitor_reads_caps_another_process_set(root):  # noqa: F811
    monitor = platform(root)
    assert monitor.current_operating_point().name == "MAXN"
    grid = caps_grid(ORIN, ORIN.preset(MAXN))
    top_gpu_hz = max(p.gpu_max_freq_hz for p in grid)
    capped = next(p for p in grid if p.cpu_online_cores < 12 and p.gpu_max_freq_hz < top_gpu_hz)
    move_board_in_another_process(root, capped.name)
    seen = monitor.current_operating_point()  # before: the point cached at start, "MAXN"
    assert seen.name == capped.name
    assert (seen.cpu_online_cores, seen.cpu_max_freq_hz, seen.gpu_max_freq_hz, seen.emc_max_freq_hz) == \
        (capped.cpu_online_cores, capped.cpu_max_freq_hz, capped.gpu_max_freq_hz, capped.emc_max_freq_hz)
    move_board_in_another_process(root, "MAXN")  # a plain preset lifts the caps
    assert monitor.current_operating_point().name == "MAXN"
    assert not monitor.current_operating_point().has_caps


def test_the_point_this_platform_applied_keeps_its_object(root):  # noqa: F811
    governor = platform(root)
    point = caps_grid(ORIN, ORIN.preset(MAXN))[5]
    governor.apply(point)
    assert governor.current_operating_point() is point  # the governor's own point, as it set it

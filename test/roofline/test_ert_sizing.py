"""ERT working sets sized from the cache hierarchy and the free memory, and an honest result
where DRAM is out of reach. Hosts are injected (cache detection and memory budget patched) and
the kernel is replaced by a synthetic one, so nothing here depends on the machine it runs on."""

import logging

import pytest

from edge_roofline.cli import main
from edge_roofline.roofline import ert
from edge_roofline.roofline.ceilings import Ceilings, CeilingsCache, CeilingsError

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3
GB_LLC = 1_000_000_000  # a 1 GB L3, as sysfs reports "976562K"


class SyntheticHost:
    """A host's caches and memory budget, and a kernel whose bandwidth falls per level."""

    def __init__(self, monkeypatch, cache, budget_bytes):
        self.cache, self.budget, self.sizes = cache, budget_bytes, []
        # raising=False: on code without the budget the test fails on behaviour, not on setup
        monkeypatch.setattr(ert, "cpu_cache_bytes", lambda sys_root="/": dict(cache))
        monkeypatch.setattr(ert, "memory_budget_bytes", lambda sys_root="/": budget_bytes, raising=False)
        monkeypatch.setattr(ert, "measure_cpu_points", self.measure)
        monkeypatch.setattr(ert, "measure_cpu_dispatch_s", lambda: 1e-6)
        monkeypatch.setattr(ert, "measure_cpu_gemm_flops", lambda sizes=(): 1e11)

    def bandwidth_bps(self, size):
        llc = self.cache.get("llc", self.cache["l2"])
        if size <= self.cache["l2"]:
            return 100e9
        return 50e9 if size <= llc else 50e9 * llc / size + 10e9 * (1 - llc / size)

    def measure(self, sizes, flops_per_element, **_):
        assert max(sizes) <= self.budget, "a working set over the memory budget"
        self.sizes += list(sizes)
        return [ert.ErtPoint(s, k, 2.0 * s / self.bandwidth_bps(s), 2.0 * s, float(k * s // 4))
                for s in sizes for k in flops_per_element]


@pytest.mark.parametrize("quick", [True, False])
def test_1gb_llc_host_sizes_dram_working_sets_from_the_cache(monkeypatch, tmp_path, quick):
    host = SyntheticHost(monkeypatch, {"l1": 48 * KIB, "l2": 2 * MIB, "llc": GB_LLC}, budget_bytes=16 * GIB)
    result = ert.measure_cpu_ceilings(quick=quick, sys_root=tmp_path)
    assert max(host.sizes) >= 4 * GB_LLC
    assert result.ceilings.dram_unresolved is None and result.warning is None
    dram = sorted(host.bandwidth_bps(s) for s in set(host.sizes) if s >= 4 * GB_LLC)
    assert result.ceilings.dram_bandwidth_bps == pytest.approx(sum(dram) / len(dram))
    # Quick stays quick: one DRAM-side point, and no FLOP-heavy kernel on arrays beyond the L2.
    beyond = [s for s in set(host.sizes) if s > GB_LLC]
    assert len(beyond) == (1 if quick else 2)
    assert all(p.flops_per_element == 2 for p in result.points if p.working_set_bytes > 2 * MIB)


def test_1gb_llc_host_without_memory_for_dram_returns_the_caches_and_warns(monkeypatch, tmp_path, caplog):
    host = SyntheticHost(monkeypatch, {"l1": 48 * KIB, "l2": 2 * MIB, "llc": GB_LLC}, budget_bytes=3 * GIB)
    with caplog.at_level(logging.WARNING, logger=ert.__name__):
        result = ert.measure_cpu_ceilings(quick=True, sys_root=tmp_path)
    c = result.ceilings
    assert max(host.sizes) == 3 * GIB  # the largest working set memory allows, beyond the LLC
    assert c.dram_unresolved and "memory budget" in c.dram_unresolved and "3072 MiB" in c.dram_unresolved
    assert c.dram_bandwidth_bps == pytest.approx(host.bandwidth_bps(3 * GIB))  # the bound, not a cache level
    assert c.l2_bandwidth_bps == pytest.approx(100e9)
    assert c.dram_text().startswith("unmeasured (<= ")
    assert [r.getMessage() for r in caplog.records] == [result.warning]
    assert "DRAM bandwidth not measured" in result.warning and "upper bound" in result.warning


def test_small_cache_board_with_little_memory_stays_within_it(monkeypatch, tmp_path):
    """A Cortex-A57-like board (L2 is the last level) with 12 MiB to spare."""
    host = SyntheticHost(monkeypatch, {"l1": 32 * KIB, "l2": MIB}, budget_bytes=12 * MIB)
    result = ert.measure_cpu_ceilings(quick=True, sys_root=tmp_path)
    assert max(host.sizes) == 4 * MIB
    assert result.ceilings.dram_unresolved is None
    assert result.ceilings.dram_bandwidth_bps == pytest.approx(host.bandwidth_bps(4 * MIB))


def test_ceilings_cli_with_dram_out_of_reach_exits_0_and_says_so(monkeypatch, tmp_path, capsys):
    SyntheticHost(monkeypatch, {"l1": 48 * KIB, "l2": 2 * MIB, "llc": GB_LLC}, budget_bytes=2 * GIB)
    assert main(["ceilings", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "DRAM unmeasured (<= " in out and "ridge >= " in out and "largest working set 2048 MiB" in out
    assert main(["ceilings", "--cache-dir", str(tmp_path), "--cached"]) == 0
    captured = capsys.readouterr()
    assert "DRAM unmeasured" in captured.out and "DRAM bandwidth not measured" in captured.err


def _write_cache_dir(root, levels):
    """A fake /sys cpu tree: levels = [(cpu, index, level, type, size, shared_cpu_list)]."""
    for cpu, index, level, kind, size, shared in levels:
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cache/index{index}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (d / name).write_text(f"{value}\n")


def test_cache_detection_counts_llc_instances_and_assumes_one_without_sysfs(tmp_path):
    two_sockets = [(cpu, 0, 1, "Data", "48K", str(cpu)) for cpu in range(4)]
    two_sockets += [(cpu, 1, 3, "Unified", "105M", "0-1" if cpu < 2 else "2-3") for cpu in range(4)]
    _write_cache_dir(tmp_path / "a", two_sockets)
    assert ert.cpu_cache_bytes(tmp_path / "a") == {"l1": 48 * KIB, "l2": MIB, "llc": 2 * 105 * MIB}
    assert ert.cpu_cache_bytes(tmp_path / "none")["llc"] == 32 * MIB


def test_memory_budget_is_half_the_available_or_the_cgroup_room(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text("MemTotal: 4000000 kB\nMemFree: 100 kB\nMemAvailable: 2000000 kB\n")
    assert ert.memory_budget_bytes(tmp_path) == 1000000 * KIB
    cgroup = tmp_path / "sys/fs/cgroup"
    cgroup.mkdir(parents=True)
    (cgroup / "memory.max").write_text("max\n")  # no limit
    (cgroup / "memory.current").write_text("5\n")
    assert ert.memory_budget_bytes(tmp_path) == 1000000 * KIB
    (cgroup / "memory.max").write_text(f"{600 * MIB}\n")
    (cgroup / "memory.current").write_text(f"{100 * MIB}\n")
    assert ert.memory_budget_bytes(tmp_path) == 250 * MIB
    assert ert.memory_budget_bytes(tmp_path / "nothing") == 256 * MIB


def test_cache_files_without_the_dram_field_load_and_broken_ones_are_an_error(tmp_path):
    cache = CeilingsCache(tmp_path)
    c = Ceilings(engine="cpu", precision="fp32", peak_flops=1e11, dram_bandwidth_bps=1e10,
                 l2_bandwidth_bps=None, l1_bandwidth_bps=None, layer_overhead_s=1e-6, source="measured",
                 label="x", dram_unresolved="why")
    path = cache.put("host", "default", c)
    assert cache.get("host", "default", "cpu", "fp32") == c
    old = {k: v for k, v in c.to_dict().items() if k not in ("dram_unresolved", "ridge_point")}
    path.write_text('{"ceilings": {"cpu/fp32": %s}}' % __import__("json").dumps(old))
    assert cache.get("host", "default", "cpu", "fp32").dram_unresolved is None  # written when DRAM was reached
    path.write_text('{"ceilings": {"cpu/fp32": {"engine": "cpu"}}}')
    with pytest.raises(CeilingsError, match="unreadable"):
        cache.get("host", "default", "cpu", "fp32")
    assert cache.put("host", "default", c) == path and cache.get("host", "default", "cpu", "fp32") == c


def test_host_cpu_ceilings_returns_on_this_machine(tmp_path, monkeypatch):
    """What the inference node calls with its default device: a real quick measurement here,
    then a broken cache file is measured again rather than failing the node."""
    from edge_roofline.inference.ceilings import host_cpu_ceilings

    cache = CeilingsCache(tmp_path)
    c = host_cpu_ceilings(cache)()
    assert c.source == "measured" and c.peak_flops > 1e9 and c.dram_bandwidth_bps > 1e8
    for path in tmp_path.glob("*.json"):
        path.write_text("{not json")
    monkeypatch.setattr(ert, "measure_cpu_ceilings", lambda quick=True: type("R", (), {"ceilings": c})())
    assert host_cpu_ceilings(cache)() == c


def test_reports_mark_an_unmeasured_dram_roof():
    """analyze's text and the node's RooflineReport (and its decoding) never present the bound
    as a measured DRAM bandwidth."""
    from edge_roofline.commands.analyze import _format_table
    from edge_roofline.nodes.convert import roofline_report_msg
    from edge_roofline.ros.analysis import roofline_analysis_from_msg
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.roofline.model import analyze_roofline
    from edge_roofline.models import zoo

    c = Ceilings(engine="cpu", precision="fp32", peak_flops=1e11, dram_bandwidth_bps=4e10,
                 l2_bandwidth_bps=None, l1_bandwidth_bps=None, layer_overhead_s=1e-6, source="measured",
                 label="host", dram_unresolved="the largest working set is under 4x the LLC")
    analysis = analyze_roofline(analyze_model(zoo.build("tiny_cnn")), c)
    assert "DRAM unmeasured (<= 40.0 GB/s), ridge >= 2.5 FLOP/B" in _format_table(analysis, top=3)
    msg = roofline_report_msg(analysis, None, model_id="m", backend="ort", device="host", simulated=False,
                              point=None, sample_count=1)
    assert msg.ceilings_source == "measured, DRAM unresolved"
    assert roofline_analysis_from_msg(msg).ceilings.dram_unresolved


def test_profile_on_the_host_cpu_without_dram_in_reach_runs_and_says_so(monkeypatch, tmp_path, capsys):
    """`profile --backend ort` with its default ceilings (the host CPU's) on a 1 GB-LLC host
    whose memory cannot hold 4x the LLC."""
    import json

    SyntheticHost(monkeypatch, {"l1": 48 * KIB, "l2": 2 * MIB, "llc": GB_LLC}, budget_bytes=2 * GIB)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    out = tmp_path / "p.json"
    assert main(["profile", "zoo:tiny_cnn", "--backend", "ort", "--runs", "1", "--json", str(out)]) == 0
    assert "DRAM unmeasured (<= " in capsys.readouterr().out
    assert "memory budget" in json.loads(out.read_text())["ceilings"]["dram_unresolved"]

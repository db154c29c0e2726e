"""run_node hands the package's Python log records to the node's rclpy logger (nodes/common.NodeLog)
for as long as that node runs: a process that runs nodes one after another (a test, a script)
must not log each record once per node it ever ran, to nodes already destroyed. Run in a child
process: run_node installs its own signal handlers."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = '''
import logging
from rclpy.node import Node
from edge_roofline.governor.config import ConfigError
from edge_roofline.nodes.common import NodeLog, run_node

class RefusingNode(Node):
    def __init__(self):
        super().__init__("refusing")
        logging.getLogger("edge_roofline.platforms").warning("power rail VIN missing")  # as a platform logs
        raise ConfigError("refused on purpose")

codes = [run_node(RefusingNode, []) for _ in range(2)]
left = [h for h in logging.getLogger("edge_roofline").handlers if isinstance(h, NodeLog)]
print("codes", codes, "handlers left", len(left))
'''


def test_each_run_hands_records_to_its_own_node_and_takes_the_handler_back(ros_env, tmp_path):
    script = tmp_path / "refusing_twice.py"  # a file: run_node names a node by its class's source file
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=ros_env, capture_output=True, text=True, timeout=60)
    assert "codes [2, 2] handlers left 0" in done.stdout, done.stdout + done.stderr
    assert done.stderr.count("power rail VIN missing") == 2, done.stderr  # once per run, not per node ever run
    assert "[WARN]" in done.stderr and "[refusing]" in done.stderr, done.stderr
    assert done.stderr.count("refusing: cannot start: refused on purpose") == 2, done.stderr
